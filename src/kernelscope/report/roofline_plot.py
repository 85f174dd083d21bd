"""The static roofline (PNG, SVG or PDF) with matplotlib, drawn to be pasted into a PR or a doc.

- One scatter collection per series (verdict x hollow x size class), never one artist per kernel:
  drawing stays linear and a 20,000-kernel SVG stays small (matplotlib reuses one marker path).
- The top kernels by time carry their rank number (the table's #), placed where it overlaps no
  other number, marker or the plot's edge; a key beside the plot names them, middle-elided.
- Roofs use colours no verdict uses; every numbered kernel has a dotted line up to the roof of its
  own precision, and every marker's edge has that roof's colour.
- No text from a report is read as mathtext (`$x$` in a kernel name prints as typed).
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
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
from .roofline_data import Point, RooflineData  # noqa: E402
from .style import BOUND_COLOUR, MEMORY_ROOF_COLOUR, roof_colour  # noqa: E402
from .text import clean, elide  # noqa: E402

FORMATS = ("png", "svg", "pdf")
KEY_NAME = 32  # characters of a name in the key (the longest line still fits the figure)
LABELLED = 12  # kernels numbered on the plot and named in the key; the rest by hover in the HTML
SIZE = 11.0, 6.5  # inches
AXES = (0.075, 0.1, 0.56, 0.78)  # left, bottom, width, height (figure fraction): the key is right of it
SIDE_X = 0.655
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
    ys = [p.tflops for p in data.points] + [r.tflops for r in data.roofs] or [1.0]
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


def _roofs(ax: Axes, data: RooflineData) -> tuple[list[Line2D], dict[str, str]]:
    x0, x1 = ax.get_xlim()
    y0 = ax.get_ylim()[0]
    top = max((r.ridge for r in data.roofs), default=x1)
    handles = [ax.plot([x0, top], [x0 * data.memory_tbps, top * data.memory_tbps], color=MEMORY_ROOF_COLOUR,
                       lw=1.6, label=f"HBM roof (slope) {data.memory_tbps:g} TB/s\n{data.memory_key}")[0]]
    colours = {}
    for i, roof in enumerate(data.roofs):
        c = colours[roof.key] = roof_colour(i)
        handles.append(ax.plot([roof.ridge, x1], [roof.tflops, roof.tflops], color=c, lw=1.8,
                               label=f"{roof.key.rsplit('.', 1)[-1]} roof {roof.tflops:g} TFLOP/s, ridge "
                                     f"{roof.ridge:.0f} FLOP/B\n{roof.key}")[0])
        ax.plot([roof.ridge, roof.ridge], [y0, roof.tflops], color=c, lw=0.9, ls=":")
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
    legend = [Line2D([], [], ls="", marker="o", ms=7, color=c, label=b if b == "unmeasured" else f"{b}-bound")
              for b, c in BOUND_COLOUR.items() if any(p.bound == b for p in data.points)]
    if any(not p.measured for p in data.points):
        legend.append(Line2D([], [], ls="", marker="o", ms=7, mfc="none", mec="0.2",
                             label="hollow: AI unmeasured, placed by SM busy"))
    for floor, d in SIZES[:-1]:
        legend.append(Line2D([], [], ls="", marker="o", ms=d, mfc="0.85", mec="0.5",
                             label=f"marker size: >= {100 * floor:g} % of time"))
    return legend


def _links(ax: Axes, data: RooflineData, shown: Sequence[Point], colours: dict[str, str]) -> None:
    """A dotted line from each numbered kernel up to the roof it is held to (one collection a roof)."""
    roofs = {r.key: r for r in data.roofs}
    for key, colour in colours.items():
        segs = [[(p.ai, p.tflops), (p.ai, min(roofs[key].tflops, p.ai * data.memory_tbps))]
                for p in shown if p.roof == key]
        if segs:
            ax.add_collection(LineCollection(segs, colors=colour, linestyles=":", linewidths=1.0, zorder=2))


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


def _side(fig: Figure, renderer: RendererBase, legend: list[Line2D], data: RooflineData,
          shown: Sequence[Point], placed: set[int]) -> None:
    leg = fig.legend(handles=legend, loc="upper left", bbox_to_anchor=(SIDE_X, AXES[1] + AXES[3]), fontsize=7,
                     frameon=False, borderaxespad=0, handlelength=2.6, handletextpad=1.0, labelspacing=0.75)
    bottom = fig.transFigure.inverted().transform(leg.get_window_extent(renderer))[0][1]
    lines = ["#  kernel (share of time)"]
    lines += [f"{p.rank:<2} {elide(clean(p.name), KEY_NAME)} ({100 * p.time_share:.0f} %"
              + ("" if p.measured else ", AI unmeasured") + ("" if p.rank in placed else ", crowded: no number")
              + ")" for p in shown]
    rest = len(data.points) - len(shown)
    if rest > 0:
        share = sum(p.time_share for p in data.points[len(shown):])
        lines.append(f"+ {rest} more kernel(s), {100 * share:.0f} % of time\n   (hover them in the HTML report)")
    for ranks, why in ((data.no_flops, "no FLOP measured"), (data.unplaced, "no AI and no SM busy")):
        if ranks:
            lines.append(f"not drawn ({why}): #{', #'.join(map(str, ranks[:8]))}"
                         + (f" +{len(ranks) - 8} more" if len(ranks) > 8 else ""))
    fig.text(SIDE_X, bottom - 0.03, "\n".join(lines), fontsize=7, family="monospace", va="top", ha="left",
             linespacing=1.35)


@dataclass(frozen=True)
class Drawn:
    figure: Figure
    axes: Axes
    labels: dict[int, Annotation]  # rank -> its number on the plot


def draw(data: RooflineData, title: str, subtitle: str = "") -> Drawn:
    """The figure; call inside `_literal_text()` (render and write do)."""
    fig = plt.figure(figsize=SIZE, dpi=110)
    ax = _axes(fig, data)
    handles, colours = _roofs(ax, data)
    legend = handles + _points(ax, data, colours)
    shown = data.points[:LABELLED]
    _links(ax, data, shown, colours)
    fig.text(AXES[0], 0.965, clean(title), fontsize=11, fontweight="bold", va="top")
    if subtitle:
        fig.text(AXES[0], 0.925, clean(subtitle), fontsize=8, color="0.3", va="top")
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    labels = _place(ax, renderer, shown, fig.dpi)
    _side(fig, renderer, legend, data, shown, set(labels))
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
