"""The kernel view shared by the terminal, markdown and HTML: one row a kernel (its launches
together, `analysis.groups`) or one a launch on request, ranked by time, so that "#3" means the
same kernel in the table, on the roofline and in the frontier. Figures, names and units come from
the one column spec (kernelscope/columns.py); a grouped row shows the summed time and the figures
of the kernel's representative launch, whose verdict stands for it. `roof` and `roof %` are the
roof the verdict stands on, at the clock the kernel ran at; `SoL comp`/`SoL mem` are the datasheet
figures beside it."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

from ..analysis.frontier import FrontierItem, frontier
from ..analysis.frontier import ranked as ranked_frontier
from ..analysis.groups import KernelGroup, Key, display_names, group
from ..analysis.verdict import roof_pct, verdict_roof
from ..columns import BY_NAME, Shown, value
from ..model import Assessment, Limiter
from .style import BOUND_ANSI
from .table import NAME, ORIGIN, Col, Table


def shown(name: str) -> Shown:
    """How a view shows a figure, from its declaration (columns.py); a figure declared with no view
    is a KeyError here, and tests/test_architecture.py checks every view's figures are declared."""
    how = BY_NAME[name].shown
    if how is None:
        raise KeyError(f"{name}: no view declared in the column spec")
    return how


@dataclass(frozen=True)
class Ranked:
    """A row of the view: rank 1 is the kernel with the most time."""

    rank: int
    group: KernelGroup
    total_ns: float | None  # the group's summed time (None if a launch's was not measured)
    lead: Assessment  # the launch whose figures and verdict stand for the kernel
    name: str  # as shown: the short name, with template arguments where two kernels share it


def ranked(items: Sequence[Assessment], per_launch: bool = False) -> list[Ranked]:
    groups = ([KernelGroup(a.record.name, a.record.name_full, a.record.source, (a,)) for a in items] if per_launch
              else group(items))
    timed = sorted(((g.total_ns, g) for g in groups), key=lambda tg: -(tg[0] or 0.0))
    shown = display_names((g.name, g.name_full) for _, g in timed)
    return [Ranked(i, g, t, g.representative, n) for i, ((t, g), n) in enumerate(zip(timed, shown, strict=True), 1)]


@contextmanager
def no_gc_pauses() -> Iterator[None]:
    """For the text views (terminal, markdown). Building 10^5 rows of small lists sets off the
    cyclic collector over every object alive (all the kernels: most of the time at 100k rows);
    these lists form no cycle, so it waits until the text is built."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def total_time(rows: Sequence[Ranked]) -> float:
    """The summed time of the rows, ns (1 when none was measured, so shares stay defined)."""
    return sum(r.total_ns or 0.0 for r in rows) or 1.0


def kernel_frontier(rows: Sequence[Ranked], weights: Mapping[Key, float] | None = None,
                    basis: str = "joined profile") -> list[tuple[int, FrontierItem]]:
    """The next-lever frontier over kernels (analysis/frontier.py ranks each kernel by its total
    time over its launches, or by `weights` from a joined whole-run profile), with the kernel's
    rank in the table."""
    rank: dict[Key, int] = {}
    for r in rows:  # per launch, a kernel has several rows: the first gives the rank
        rank.setdefault((r.group.source, r.group.name_full), r.rank)
    if len(rank) == len(rows):  # one row a kernel: the rows' groups are the kernels
        items = ranked_frontier([r.group.summary() for r in rows], weights, basis)
    else:
        items = frontier([a for r in rows for a in r.group.launches], weights, basis)
    return [(rank.get((f.source, f.kernel_full), 0), f) for f in items]


def share_text(f: FrontierItem) -> str:
    """A frontier row's share, saying of what: ncu's captured time or a joined profile's."""
    if f.time_share_pct is None:
        return f.share_basis
    return f"{f.time_share_pct:.0f} % of {'captured time' if f.share_basis.startswith('ncu:') else f.share_basis}"


REPORT_SUFFIXES = (".ncu-rep.gz", ".ncu-rep", ".csv.gz", ".csv")


def _stem(name: str) -> str:
    return next((name[: -len(x)] for x in REPORT_SUFFIXES if name.endswith(x) and len(name) > len(x)), name)


def origin_labels(inputs: Sequence[PurePath], sources: Sequence[str]) -> dict[str, str]:
    """Report path -> the name of the input it came from (the file without its report extension,
    or the bundle directory): what a reader typed, never this machine's path. A plain directory of
    reports (no manifest.json: separate captures, not one bundle) labels each by directory/report."""
    out = {}
    for s in sources:
        path = PurePath(s)
        given = next((p for p in inputs if path == p or p in path.parents), path)
        loose = given != path and not Path(given, "manifest.json").exists()
        out[s] = f"{given.name}/{_stem(path.relative_to(given).as_posix())}" if loose else _stem(given.name)
    return out


def number(spec: str, scale: float = 1.0) -> Any:
    """A cell format: the value times `scale`, in `spec`."""
    return lambda v: format(v * scale, spec)


def judgement(a: Assessment) -> list[tuple[str, str]]:
    """What a verdict stands on, as (label, text) lines for the detailed views: the kernel's full
    name, the figures that decided it, ncu's own verdict and rules beside it, and who owns the code
    (which sets the levers)."""
    agrees = {True: "agrees", False: "differs", None: "not compared"}[a.ncu.agrees]
    p = a.provenance
    full = a.record.name_full
    out = [("full name", full)] if full and full != a.record.name else []
    out += [("evidence", e) for e in a.evidence if e != a.verdict]
    out.append((f"ncu's verdict, {agrees}", a.ncu.why))
    if a.ncu.rules:
        out.append(("ncu rules fired", ", ".join(a.ncu.rules)))
    out.append(("code", f"{p.family} ({p.kind}{', warp-specialised' if p.warp_specialised else ''}): {p.evidence}"))
    if a.capture is not None and a.capture.multiplexed:
        said = "multiplexed: "
        out += [("multiplexed", n.removeprefix(said)) for n in a.record.notes if n.startswith(said)]
        decided = ("duration_ns", "flops.", "dram_bytes", "sm_clock_hz", "tensor_pipe_active_pct")  # the roofline's
        out += [("figure from", f"{fig}: {how}") for fig, how in a.record.sources.items() if fig.startswith(decided)]
    return out


def roof_name(r: Limiter) -> str:
    return r.name.replace(" roof", "")


def bound_cell(a: Assessment) -> str:
    """The bound as a table shows it: a provisional one marked `?`."""
    return f"{a.bound}?" if a.provisional else a.bound


# the table's figure columns after roof %, and the rank at which each is hidden when narrow (last
# first: launches (1), time % (2), roof (3), next lever (6), then these)
TABLE_FIGURES: tuple[tuple[str, int], ...] = (
    ("pct_sol_compute", 7), ("pct_sol_memory", 8), ("arithmetic_intensity", 9), ("achieved_tflops", 10),
    ("achieved_dram_tbps", 11), ("achieved_occupancy_pct", 12),
)
# --achievable's figures (analysis/pipeline.py), beside the datasheet's SoL comp and SoL mem
ACHIEVABLE: tuple[tuple[str, Shown], ...] = BY_NAME["pct_of_achievable"].key_shown
# a column a caller adds after `time %` (join's profile figures): the column and its value of a row
Extra = tuple[Col, Callable[[Ranked], Any]]


def _achievable(a: Assessment, key: str) -> Any:
    return None if a.achievable is None else a.achievable.get(key)


def table(rows: Sequence[Ranked], labels: Mapping[str, str] | None = None, origin: str = "source",
          show_origin: bool | None = None, per_launch: bool = False, title: str = "",
          notes: tuple[str, ...] = (), extra: Sequence[Extra] = ()) -> Table:
    """The kernel table. `labels` maps a report path to what the `origin` column shows (input
    name, or campaign cell id); by default the column appears when rows come from several. The
    `ach` columns appear when the kernels were also held to measured ceilings (--achievable)."""
    labels = labels or {}
    several = len({labels.get(r.group.source, r.group.source) for r in rows}) > 1 if show_origin is None \
        else show_origin
    launches = not per_launch and any(len(r.group.launches) > 1 for r in rows)
    total = total_time(rows)
    achievable = any(r.lead.achievable for r in rows)
    cols = [Col("rank", "#", right=True), Col("name", "kernel", elide=NAME, code=True)]
    if several:
        cols.append(Col(origin, origin, elide=ORIGIN))
    if launches:
        cols.append(Col("launches", "launches", right=True, drop=1))
    if per_launch:
        cols.append(Col("launch_id", "launch", right=True, drop=1))
    time, sol = shown("duration_ns"), shown("pct_sol")
    cols += [Col("duration_ns", time.heading, number(time.fmt, time.scale), right=True),
             Col("time_share_pct", "time %", number(".1f"), right=True, drop=2),
             *[col for col, _ in extra],
             Col("bound", "bound", colour=lambda s: BOUND_ANSI.get(s.rstrip("?"))),
             Col("roof", "roof", drop=3), Col("pct_sol", sol.heading, number(sol.fmt), right=True),
             *[Col(name, how.heading, number(how.fmt, how.scale), right=True, drop=drop)
               for name, drop in TABLE_FIGURES for how in (shown(name),)],
             *[Col(f"pct_of_achievable.{key}", how.heading, number(how.fmt), right=True, drop=7)
               for key, how in (ACHIEVABLE if achievable else ())],
             Col("next_lever", "next lever", drop=6)]
    out = []
    for r in rows:
        a, g = r.lead, r.group
        vals: list[Any] = [r.rank, r.name]
        if several:
            vals.append(labels.get(g.source, g.source))
        if launches:
            vals.append(len(g.launches))
        if per_launch:
            vals.append(a.record.launch_id)
        roof = verdict_roof(a)
        vals += [r.total_ns, None if r.total_ns is None else 100.0 * r.total_ns / total,
                 *[get(r) for _, get in extra], bound_cell(a), None if roof is None else roof_name(roof), roof_pct(a),
                 *[value(a, name) for name, _ in TABLE_FIGURES],
                 *[_achievable(a, key) for key, _ in (ACHIEVABLE if achievable else ())],
                 a.next_levers[0].rule if a.next_levers else None]
        out.append(vals)
    return Table(tuple(cols), out, title, notes)


def bound_notes(rows: Sequence[Ranked]) -> list[str]:
    """What the table's bound column cannot say by itself: which kernels are provisional or
    unmeasured, and why (what their reports lack), one line a reason; which are multiplexed."""
    out = []
    for label, which in (("provisional (bound?)", "provisional"), ("unmeasured", "unmeasured")):
        reasons: dict[str, list[str]] = {}
        for r in rows:
            if r.lead.provisional if which == "provisional" else r.lead.bound == "unmeasured":
                reasons.setdefault(unsettled_why(r.lead), []).append(f"#{r.rank}")
        for why, ranks in reasons.items():
            out.append(f"bound {label} for {', '.join(ranks[:10])}{' …' if len(ranks) > 10 else ''}: {why}, so no "
                       "%SoL; --details says what would settle it")
    mixed = [f"#{r.rank} ({said})" for r in rows if not r.group.consistent and (said := _other_verdicts(r))]
    if mixed:
        out.append(f"launches held by another limiter, share of the kernel's time: {', '.join(mixed[:10])}"
                   f"{' …' if len(mixed) > 10 else ''}: a row shows the launch whose limiter holds most of its time; "
                   "--per-launch shows each")
    multi = [f"#{r.rank}" for r in rows if r.lead.capture is not None and r.lead.capture.multiplexed]
    if multi:
        out.append(f"multiplexed for {', '.join(multi[:10])}{' …' if len(multi) > 10 else ''}: each figure from one of "
                   "several launches of the kernel, one counter group a launch; --details names the launch of each "
                   "and which were replayed")
    return out


OTHER_VERDICT_PCT = 10.0  # launches of another limiter holding less of a kernel's time do not change its reading


def _other_verdicts(r: Ranked) -> str:
    """The limiters of a kernel's launches other than its row's, with their share of its time, when
    together they hold OTHER_VERDICT_PCT of it or more; "" otherwise (or when its time is unmeasured)."""
    total = sum(a.record.duration_ns or 0.0 for a in r.group.launches)
    other: dict[str, float] = {}
    for a in r.group.launches:
        if a.limiter.kind != r.lead.limiter.kind:
            other[a.limiter.name] = other.get(a.limiter.name, 0.0) + (a.record.duration_ns or 0.0)
    if not total or 100 * sum(other.values()) / total < OTHER_VERDICT_PCT:
        return ""
    return ", ".join(f"{name} {100 * t / total:.0f} %" for name, t in other.items())


def unsettled_why(a: Assessment) -> str:
    """Why a provisional or unmeasured kernel has no roofline verdict, as its evidence says."""
    said = next((e.removeprefix("provisional: ") for e in a.evidence if e.startswith("provisional: ")), None)
    return said or a.limiter.reading.removeprefix("unmeasured: ").split(", no roofline verdict")[0]
