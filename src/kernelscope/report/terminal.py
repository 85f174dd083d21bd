"""The terminal view: a summary line, one row a kernel, and the next levers across kernels; each
kernel's verdict, limiters and levers only on request (`details`). Built as one string: plain text
when piped, colour only on a terminal; every string from a report goes through `text.clean`, so a
kernel name can neither colour, move the cursor nor link anything."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..analysis.frontier import FrontierItem
from ..columns import unmeasured_of
from ..model import Assessment
from . import kernels
from .kernels import Ranked
from .safe_text import clean, elide
from .table import NONE, render_text, wrap

FRONTIER_SHOWN = 5


def _n(value: object, spec: str) -> str:
    return format(value, spec) if isinstance(value, (int, float)) else NONE


def _name(name: str, width: int | None) -> str:
    return elide(clean(name), max(24, (width or 10_000) // 2))


def frontier_lines(front: Sequence[tuple[int, FrontierItem]], width: int | None,
                   shown: int = FRONTIER_SHOWN) -> list[str]:
    """The next levers across kernels (kernels.kernel_frontier), the first `shown` of them."""
    if not front:
        return []
    out = wrap(f"Next levers across kernels (expected gain x time share / cost; {min(shown, len(front))} "
               f"of {len(front)}):", width)
    for i, (rank, f) in enumerate(front[:shown], 1):
        out += wrap(f"{i:2d}. #{rank} {_name(f.kernel, width)} ({kernels.share_text(f)}) "
                     f"[{f.rule}] {f.action}", width, "     ")
        out += wrap(f"     expect: {f.expected}; confirm: {f.confirm}", width, "     ")
    return out


def detail_lines(r: Ranked, source: str, width: int | None) -> list[str]:
    """One kernel's verdict with what it stands on, ceilings, limiters and levers (its representative
    launch's)."""
    a, g = r.lead, r.group
    rec = a.record
    times = [t / 1e3 for t in (x.record.duration_ns for x in g.launches) if t is not None]
    spread = (f"{len(g.launches)} launches, {min(times):.1f}-{max(times):.1f} µs" if len(g.launches) > 1 and times
              else f"launch {rec.launch_id}")
    out = wrap(f"#{r.rank} {r.name} ({source}, {spread}, {rec.device or 'device unknown'})", width)
    lines = [a.verdict, *(f"{label}: {text}" for label, text in kernels.judgement(a))]
    roof = (f"compute ceiling {a.compute_ceiling_key} = {_n(a.compute_ceiling_tflops, 'g')} TFLOP/s, "
            if a.compute_ceiling_key else "")
    lines.append(f"{roof}memory ceiling {a.memory_ceiling_key} = {_n(a.memory_ceiling_tbps, 'g')} TB/s"
                 + (f", ridge {a.ridge_flops_per_byte:.0f} FLOP/B" if a.ridge_flops_per_byte else ""))
    if a.achievable:
        ach = a.achievable
        lines.append(f"of achievable ({ach['ceilings_file']}): compute {_n(ach['pct_compute'], '.0f')} % "
                     f"({ach['compute_ceiling_key']}), memory {_n(ach['pct_memory'], '.0f')} % "
                     f"({ach['memory_ceiling_key']})")
    if rec.dominant_precision:
        lines.append(f"dominant precision {rec.dominant_precision}; SM busy {_n(rec.sm_busy_pct, '.0f')} %, "
                     f"issue slots busy {_n(rec.issue_active_pct, '.0f')} %, SM active {_n(rec.sm_active_pct, '.0f')} "
                     f"%; tensor pipe {_n(rec.tensor_pipe_active_pct, '.0f')} %")
    lines += [f"• {x}" for x in a.limiters]
    for i, lv in enumerate(a.next_levers, 1):
        lines += [f"{i}. [{lv.rule}] {lv.action}", f"   expect: {lv.expected}; confirm: {lv.confirm}"]
    if missing := unmeasured_of(a):
        lines.append(f"unmeasured: {', '.join(missing)}")
    for line in lines:
        out += wrap("  " + line, width, "     ")
    return out


def render(items: Sequence[Assessment], headline: str, labels: Mapping[str, str] | None = None,
           width: int | None = None, colour: bool = False, details: bool = False,
           per_launch: bool = False) -> str:
    with kernels.no_gc_pauses():
        return _render(items, headline, labels, width, colour, details, per_launch)


def _render(items: Sequence[Assessment], headline: str, labels: Mapping[str, str] | None, width: int | None,
            colour: bool, details: bool, per_launch: bool) -> str:
    rows = kernels.ranked(items, per_launch)
    labels = labels or {}
    hints = [] if details else ["verdict, limiters and levers per kernel: --details"]
    if not per_launch and any(len(r.group.launches) > 1 for r in rows):
        hints.append("every launch: --per-launch")
    out = [render_text(kernels.table(rows, labels, per_launch=per_launch, title=headline), width, colour).rstrip("\n")]
    for note in kernels.bound_notes(rows):
        out += wrap(note, width)
    front = frontier_lines(kernels.kernel_frontier(rows), width)
    if front:
        out += ["", *front]
    if details:
        for r in rows:
            out += ["", *detail_lines(r, clean(labels.get(r.group.source, r.group.source)), width)]
    if hints:
        out += ["", *wrap("; ".join(hints), width)]
    return "\n".join(out) + "\n"
