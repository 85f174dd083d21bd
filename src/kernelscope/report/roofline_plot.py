"""The static roofline (PNG, SVG or PDF) with matplotlib, drawn to be pasted into a PR or a doc.

- One scatter collection per series (verdict x hollow x size class), never one artist per kernel:
  drawing stays linear and a 20,000-kernel SVG stays small (matplotlib reuses one marker path).
- The top kernels by time carry their rank number (the table's #), placed where it overlaps no
  other number, marker or the plot's edge; a key beside the plot names them, with the input each
  came from when there are several, cut so that no two of them read alike.
- Each roof a plotted kernel is judged against is drawn as its verdict reads it (roofline_data):
  FlashAttention-2 against bf16 mma.sync at its clock, not only the datasheet's bf16 peak. A
  roof's colour is its precision's (style.py), the same in every plot; no verdict uses it. Every
  numbered kernel has a dotted line up to its own roof figure, and every marker's edge has its
  roof's colour.
- No text from a report is read as mathtext (`$x$` in a kernel name prints as typed).
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from os.path import commonprefix
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.backend_bases import RendererBase  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.text import Annotation, Text  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: E402
from matplotlib.transforms import Bbox  # noqa: E402

from ..errors import KernelscopeError  # noqa: E402
from ..files import write_file  # noqa: E402
from .roofline_data import Point, Roof, RooflineData  # noqa: E402
from .safe_text import ELLIPSIS, clean, elide  # noqa: E402
from .style import BOUND_COLOUR, MEMORY_ROOF_COLOUR, roof_colour  # noqa: E402

FORMATS = ("png", "svg", "pdf")
KEY_WIDTH = 56  # characters of the key's longest line (7 pt monospace): it stays inside the figure
KEY_NAME_MIN = 20  # a name is never cut shorter
KEY_ORIGIN = 15  # characters of an input's name in the key
LABELLED = 12  # kernels numbered on the plot and named in the key; the rest by hover in the HTML
SIZE = 11.0, 6.5  # inches
AXES = (0.075, 0.1, 0.56, 0.78)  # left, bottom, width, height (figure fraction): the key is right of it
SIDE_X = 0.662  # the legends and key: clear of the x axis's last tick label
# marker diameter (points) by share of the summed kernel time: one collection per size class
SIZES: tuple[tuple[float, float], ...] = ((0.40, 24.0), (0.15, 18.0), (0.05, 13.0), (0.01, 9.0), (0.0, 6.0))
RINGS = (1.0, 2.0, 3.2, 4.6)  # label distances, in marker radii + a few points
DIRECTIONS = ((1, 0.6), (1, -0.6), (-1, 0.6), (-1, -0.6), (0, 1), (0, -1), (1, 0), (-1, 0))


def diameter(share: float) -> float:
    return next(d for floor, d in SIZES if share >= floor)


@contextmanager
def _literal_text() -> Iterator[None]:
    """Report text is data: no mathtext, no TeX."""
    with plt.rc_context({"text.parse_math": False, "text.usetex": False, "svg.fonttype": "path"}):
        yield


def _decades(lo: float, hi: float, least: int = 3) -> tuple[float, float]:
    """Whole decades around [lo, hi], at least `least` of them (so an axis never has two ticks)."""
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    while b - a < least:
        a -= 1
        if b - a < least:
            b += 1
    return 10.0 ** a, 10.0 ** b


def _axes(fig: Figure, data: RooflineData) -> Axes:
    ax = fig.add_axes(AXES)
    xs = [p.ai for p in data.points] + [r.ridge for r in data.roofs] or [1.0]
    ys = [p.tflops for p in data.points] + [r.hi for r in data.roofs] or [1.0]
    x0, x1 = _decades(min(xs) / 2, max(xs) * 2)
    y0, y1 = _decades(min(ys) / 2, max(ys) * 1.5)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    plain = FuncFormatter(lambda v, _: f"{v:g}")
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(LogLocator(base=10, numticks=20))
        axis.set_major_formatter(plain)
        axis.set_minor_locator(LogLocator(base=10, subs=(2.0, 5.0), numticks=20))
        axis.set_minor_formatter(NullFormatter())
    ax.grid(True, which="major", color="0.88", lw=0.8)
    ax.grid(True, which="minor", color="0.95", lw=0.5)
    ax.set_xlabel("arithmetic intensity (FLOP / DRAM byte)")
    ax.set_ylabel("achieved TFLOP/s")
    return ax


def figure(value: float) -> str:
    """A roof's figure as the legend prints it: three digits or more, whole units from 100 up."""
    return f"{value:.0f}" if value >= 100 else f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def roof_label(roof: Roof, slope: bool = False) -> str:
    """A roof's legend entry: its figure (a range where its kernels ran at different clocks), its
    ridge, and how the figure was had from the ceilings file's."""
    figs = figure(roof.lo) if figure(roof.lo) == figure(roof.hi) else f"{figure(roof.lo)}–{figure(roof.hi)}"
    head = f"{roof.name} roof{' (slope)' if slope else ''} {figs} {roof.unit}"
    if not slope:
        head += f", ridge {roof.ridge:.0f} FLOP/B"
    clocks = sorted({c for _, c in roof.held if c is not None})
    held = []
    datasheet = any(c is None for _, c in roof.held)
    if clocks:
        mhz = f"{clocks[0] / 1e6:.0f}" + (f"–{clocks[-1] / 1e6:.0f}" if len(clocks) > 1 else "")
        held.append(f"at {mhz} MHz" + ("" if datasheet else " (its kernels' clocks)" if len(clocks) > 1 else
                                        " (its kernel's clock)"))
    if datasheet:
        held.append("the datasheet clock" if clocks else "at the datasheet clock")
    ratio = f" × {roof.ratio:.2f}" if roof.ratio != 1.0 else ""
    return f"{head}\n= {roof.datasheet:g}{ratio} {' and '.join(held)}"


def _levels(roof: Roof) -> list[float]:
    """The figures a roof is drawn at: its highest, and its lowest where that differs (a band)."""
    return [roof.hi] + ([roof.lo] if roof.lo != roof.hi else [])


def path_style(roof: Roof) -> str | tuple[int, tuple[int, int]]:
    """A compute roof's line: solid at the chip's peak on a known path, dashed on a path below it
    (mma.sync on Hopper), dash-dot where the path is unknown (held to the chip's peak)."""
    if roof.ratio < 1:
        return (0, (5, 2))
    return "-." if roof.name.endswith("(path unknown)") else "-"


def _roofs(ax: Axes, data: RooflineData) -> tuple[list[Line2D], dict[str, str]]:
    """The HBM slope and each compute roof a plotted kernel is held to, in its precision's colour
    (dashed: an instruction path below the chip's peak); a roof held at several clocks is a band."""
    x0, x1 = ax.get_xlim()
    y0 = ax.get_ylim()[0]
    mem = data.memory
    top = max((r.ridge for r in data.roofs), default=x1)
    slope = [ax.plot([x0, top], [x0 * v, top * v], color=MEMORY_ROOF_COLOUR, lw=1.6, gid=f"roof-{mem.key}",
                     label="_" if i else roof_label(mem, slope=True))[0] for i, v in enumerate(_levels(mem))]
    handles = slope[:1]
    if mem.lo != mem.hi:
        ax.fill_between([x0, top], [x0 * mem.lo, top * mem.lo], [x0 * mem.hi, top * mem.hi],
                        color=MEMORY_ROOF_COLOUR, alpha=0.12, lw=0, gid=f"band-{mem.key}")
    colours = {}
    for roof in data.roofs:
        c = colours[roof.key] = roof_colour(roof.key)
        handles += [ax.plot([v / mem.hi, x1], [v, v], color=c, lw=1.8, ls=path_style(roof), gid=f"roof-{roof.key}",
                            label="_" if i else roof_label(roof))[0] for i, v in enumerate(_levels(roof))][:1]
        if roof.lo != roof.hi:
            ax.fill_between([roof.hi / mem.hi, x1], roof.lo, roof.hi, color=c, alpha=0.15, lw=0,
                            gid=f"band-{roof.key}")
        ax.plot([roof.ridge, roof.ridge], [y0, roof.hi], color=c, lw=0.9, ls=":")
    if data.roofs:
        handles.append(Line2D([], [], color="0.3", lw=0.9, ls=":", label="ridge: compute roof meets HBM roof"))
    return handles, colours


def _points(ax: Axes, data: RooflineData, colours: dict[str, str]) -> list[Line2D]:
    series: dict[tuple[str, bool, float], list[Point]] = {}
    for p in data.points:
        series.setdefault((p.bound, p.measured, diameter(p.time_share)), []).append(p)
    for (bound, measured, d), pts in series.items():
        fill = BOUND_COLOUR.get(bound, "black")
        edges = [colours.get(p.roof or "", fill) if measured else fill for p in pts]
        ax.scatter([p.ai for p in pts], [p.tflops for p in pts], s=d * d, zorder=3, linewidths=1.4,
                   facecolors=fill if measured else "none", edgecolors=edges, gid=f"series-{bound}-{int(d)}",
                   clip_on=False)  # the axes span every point; no per-marker clip group in the SVG
    marks = [Line2D([], [], ls="", marker="o", ms=7, color=c, label=b if b == "unmeasured" else f"{b}-bound")
             for b, c in BOUND_COLOUR.items() if any(p.bound == b for p in data.points)]
    if any(not p.measured for p in data.points):
        marks.append(Line2D([], [], ls="", marker="o", ms=7, mfc="none", mec="0.2", label="hollow: AI unmeasured"))
    sizes = [Line2D([], [], ls="", marker="o", ms=d, mfc="0.85", mec="0.5", label=f"size: >= {100 * floor:g} % of time")
             for floor, d in SIZES[:-1]]
    rows = max(len(marks), len(sizes))
    blank = Line2D([], [], ls="", label=" ")
    return marks + [blank] * (rows - len(marks)) + sizes + [blank] * (rows - len(sizes))


def reach(p: Point) -> float | None:
    """Where a kernel's own roof is above it (TFLOP/s): its compute roof at its clock, or the HBM
    slope at its intensity where that is lower."""
    return None if p.roof_tflops is None else min(p.roof_tflops, p.ai * p.memory_tbps)


def _links(ax: Axes, shown: Sequence[Point], colours: dict[str, str]) -> None:
    """A dotted line from each numbered kernel up to the roof it is held to, ending in a tick at its
    own figure (inside its roof's band): one collection a roof."""
    for key, colour in colours.items():
        held = [(p, top) for p in shown if p.roof == key and (top := reach(p)) is not None]
        if held:
            ax.add_collection(LineCollection([[(p.ai, p.tflops), (p.ai, top)] for p, top in held], colors=colour,
                                             linestyles=":", linewidths=1.0, zorder=2))
            ax.scatter([p.ai for p, _ in held], [top for _, top in held], marker="_", s=70, color=colour,
                       linewidths=1.4, zorder=2, gid=f"reach-{key}", clip_on=False)


def label_box(ann: Annotation, renderer: RendererBase) -> Bbox:
    """The box of a number (its text and white pad), without its leader line."""
    ann.update_positions(renderer)
    return Text.get_window_extent(ann, renderer).padded(2.0)


def _place(ax: Axes, renderer: RendererBase, shown: Sequence[Point], dpi: float) -> dict[int, Annotation]:
    """Number each shown kernel where its box overlaps no placed number, no numbered marker and
    stays inside the axes; farther out (a leader line joins it) when the near spots are taken."""
    px = dpi / 72.0
    frame = ax.get_window_extent(renderer)
    taken = []
    for p in shown:
        cx, cy = ax.transData.transform((p.ai, p.tflops))
        r = diameter(p.time_share) / 2 * px
        taken.append(Bbox.from_extents(cx - r, cy - r, cx + r, cy + r))
    out = {}
    for p in shown:
        radius = diameter(p.time_share) / 2
        ann = ax.annotate(str(p.rank), (p.ai, p.tflops), xytext=(0, 0), textcoords="offset points", fontsize=8,
                          fontweight="bold", ha="center", va="center", zorder=5, gid=f"label-{p.rank}",
                          bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "0.6", "lw": 0.5, "alpha": 0.9},
                          arrowprops={"arrowstyle": "-", "color": "0.45", "lw": 0.6, "shrinkA": 0,
                                      "shrinkB": radius})
        for ring, (dx, dy) in ((g, d) for g in RINGS for d in DIRECTIONS):
            norm = math.hypot(dx, dy)
            ann.xyann = (dx / norm * (radius * ring + 6), dy / norm * (radius * ring + 6))
            box = label_box(ann, renderer)
            if frame.contains(box.x0, box.y0) and frame.contains(box.x1, box.y1) and \
                    not any(box.overlaps(t) for t in taken):
                taken.append(box)
                out[p.rank] = ann
                break
        else:  # nowhere free: the key still names it
            ann.remove()
    return out


def _around(name: str, at: int, width: int) -> str:
    """`name` in `width` characters that show its character `at`: its head, then from just before."""
    head = name[: width // 3]
    start = max(len(head), at - 4)
    cut = start > len(head)
    tail = name[start:]
    room = width - len(head) - cut
    if len(tail) > room:
        tail = tail[: room - 1] + ELLIPSIS
    return head + (ELLIPSIS if cut else "") + tail


def key_names(names: Sequence[str], width: int) -> list[str]:
    """Each name in `width` characters (cut in the middle, text.elide); names that would then read
    alike are cut around where they differ instead, so two kernels never read the same in the key."""
    out = [elide(n, width) for n in names]
    alike: dict[str, list[int]] = {}
    for i, short in enumerate(out):
        alike.setdefault(short, []).append(i)
    for same in alike.values():
        for i in same:
            others = [names[j] for j in same if names[j] != names[i]]
            if others:
                out[i] = _around(names[i], max(len(commonprefix([names[i], o])) for o in others), width)
    return out


def _where(p: Point) -> str:
    """What the key's `from` column says: the input (several inputs) and the launch (per launch)."""
    return ", ".join(x for x in (None if p.origin is None else elide(clean(p.origin), KEY_ORIGIN),
                                 None if p.launch is None else f"launch {p.launch}") if x)


def _ranks(head: str, ranks: Sequence[int]) -> str:
    """`head` and as many `#rank`s as fit KEY_WIDTH, saying how many more there are."""
    for shown in range(min(len(ranks), KEY_WIDTH // 3), 0, -1):
        more = f" +{len(ranks) - shown} more" if shown < len(ranks) else ""
        line = head + ", ".join(f"#{r}" for r in ranks[:shown]) + more
        if len(line) <= KEY_WIDTH:
            return line
    return f"{head}{len(ranks)} kernel(s)"


def key_lines(data: RooflineData, shown: Sequence[Point], placed: set[int]) -> list[str]:
    """The key beside the plot: each numbered kernel's name, where it is from when kernels come from
    several inputs or launches, and its share of time; no longer than KEY_WIDTH characters."""
    where = [_where(p) for p in shown]
    flags = ["".join(f for f, on in (("*", not p.measured), ("†", p.rank not in placed)) if on) for p in shown]
    o = max(map(len, where), default=0)
    f = max(map(len, flags), default=0)
    n = max(KEY_NAME_MIN, KEY_WIDTH - 3 - (o + 1 if o else 0) - 6 - f)
    names = key_names([clean(p.name) for p in shown], n)
    col = (lambda text: " " + text.ljust(o)) if o else (lambda text: "")
    lines = [f"{'#':<2} {'kernel':<{n}}{col('from')}  time"]
    lines += [f"{p.rank:<2} {name:<{n}}{col(w)} {100 * p.time_share:>3.0f} %{fl}".rstrip()
              for p, name, w, fl in zip(shown, names, where, flags, strict=True)]
    rest = len(data.points) - len(shown)
    if rest > 0:
        share = sum(p.time_share for p in data.points[len(shown):])
        lines.append(f"+ {rest} more kernel(s), {100 * share:.0f} % of time\n   (hover them in the HTML report)")
    for ranks, why in ((data.no_flops, "no FLOP measured"), (data.unplaced, "no AI and no SM busy")):
        if ranks:
            lines.append(_ranks(f"not drawn ({why}): ", ranks))
    if any(flags):
        lines.append("* AI unmeasured (hollow)   † no room for its number")
    return lines


LINE = 7 * 1.35  # points: one line of the key


def _legends(fig: Figure, renderer: RendererBase, roofs: list[Line2D], marks: list[Line2D]) -> float:
    """The roofs' legend beside the plot, the markers' below it in two columns; returns the figure
    fraction where the key below them starts."""
    top = AXES[1] + AXES[3]
    for handles, cols in ((roofs, 1), (marks, 2)):
        leg = fig.legend(handles=handles, loc="upper left", bbox_to_anchor=(SIDE_X, top), fontsize=7, ncols=cols,
                         frameon=False, borderaxespad=0, handlelength=2.6, handletextpad=1.0, labelspacing=0.6,
                         columnspacing=1.0)
        top = fig.transFigure.inverted().transform(leg.get_window_extent(renderer))[0][1] - 0.02
    return top - 0.01


def _room(fig: Figure, top: float, data: RooflineData) -> int:
    """How many kernels the key has room for below `top`, beside its other lines."""
    lines = int(top * fig.get_figheight() * 72 / LINE)
    other = 1 + 2 * (len(data.points) > LABELLED) + bool(data.no_flops) + bool(data.unplaced) + 1
    return max(0, min(LABELLED, lines - other))


@dataclass(frozen=True)
class Drawn:
    figure: Figure
    axes: Axes
    labels: dict[int, Annotation]  # rank -> its number on the plot


def draw(data: RooflineData, title: str, subtitle: str = "") -> Drawn:
    """The figure; call inside `_literal_text()` (render and write do)."""
    fig = plt.figure(figsize=SIZE, dpi=110)
    ax = _axes(fig, data)
    roofs, colours = _roofs(ax, data)
    marks = _points(ax, data, colours)
    fig.text(AXES[0], 0.965, clean(title), fontsize=11, fontweight="bold", va="top")
    if subtitle:
        fig.text(AXES[0], 0.925, clean(subtitle), fontsize=8, color="0.3", va="top")
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    top = _legends(fig, renderer, roofs, marks)
    shown = data.points[:_room(fig, top, data)]
    _links(ax, shown, colours)
    labels = _place(ax, renderer, shown, fig.dpi)
    fig.text(SIDE_X, top, "\n".join(key_lines(data, shown, set(labels))), fontsize=7, family="monospace",
             va="top", ha="left", linespacing=1.35, gid="key")
    return Drawn(fig, ax, labels)


def svg_positions(d: Drawn, data: RooflineData) -> list[tuple[float, float, float]]:
    """Each point's centre and radius in the SVG's own units (points, origin top left)."""
    w, h = d.figure.get_size_inches() * 72
    to_fig = d.figure.transFigure.inverted()
    out = []
    for p in data.points:
        fx, fy = to_fig.transform(d.axes.transData.transform((p.ai, p.tflops)))
        out.append((round(fx * w, 1), round((1 - fy) * h, 1), diameter(p.time_share) / 2))
    return out


def render(data: RooflineData, title: str, fmt: str, subtitle: str = "") -> bytes:
    with _literal_text():
        d = draw(data, title, subtitle)
        buf = io.BytesIO()
        d.figure.savefig(buf, format=fmt, metadata={"Date": None} if fmt == "svg" else None)
        plt.close(d.figure)
    return buf.getvalue()


def render_svg(data: RooflineData, title: str, subtitle: str = "") -> tuple[str, list[tuple[float, float, float]]]:
    """The SVG element (no XML prologue) and where each point sits in it, for hover in the HTML."""
    with _literal_text():
        d = draw(data, title, subtitle)
        where = svg_positions(d, data)
        buf = io.BytesIO()
        d.figure.savefig(buf, format="svg", metadata={"Date": None})
        plt.close(d.figure)
    text = buf.getvalue().decode()
    return text[text.index("<svg"):], where


def check_format(out: Path) -> str:
    """The output format named by the file's extension, if the plot can be written as it."""
    fmt = out.suffix.lstrip(".").lower()
    if fmt not in FORMATS:
        raise KernelscopeError(f"{out}: the roofline is written as .png, .svg or .pdf; give one of those extensions")
    return fmt


def write(data: RooflineData, title: str, out: Path, subtitle: str = "") -> Path:
    return write_file(render(data, title, check_format(out), subtitle), out)
