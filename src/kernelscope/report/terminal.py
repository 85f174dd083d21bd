"""The terminal view: one table row a kernel, then each kernel's verdict, limiters and levers."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..analysis.frontier import frontier
from ..model import Assessment


def _num(value: float | str | None, fmt: str) -> str:
    return "—" if value is None else format(value, fmt) if not isinstance(value, str) else value


def render(items: Sequence[Assessment], console: Console, context_line: str) -> None:
    table = Table(title=f"kernelscope — {context_line}", title_justify="left")
    for col, just in (
        ("#", "right"), ("kernel", "left"), ("time µs", "right"), ("bound", "left"),
        ("%SoL compute", "right"), ("%SoL mem", "right"), ("FLOP/B", "right"),
        ("TFLOP/s", "right"), ("TB/s", "right"), ("occ % ach/theo", "right"), ("next lever", "left"),
    ):
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    for a in items:
        r = a.record
        lever = a.next_levers[0].rule if a.next_levers else "—"
        table.add_row(
            str(r.launch_id), r.name[:48], _num(None if r.duration_ns is None else r.duration_ns / 1e3, ".1f"),
            a.bound, _num(a.pct_sol_compute, ".1f"), _num(a.pct_sol_memory, ".1f"),
            _num(r.arithmetic_intensity, ".1f"), _num(r.achieved_tflops, ".1f"),
            _num(r.achieved_dram_tbps, ".2f"),
            f"{_num(r.achieved_occupancy_pct, '.0f')}/{_num(r.theoretical_occupancy_pct, '.0f')}", lever,
        )
    console.print(table)
    for a in items:
        r = a.record
        console.print(f"\n[bold]{r.name}[/bold] (launch {r.launch_id}, {r.source}, {r.device or 'device unknown'})")
        ceiling = (f"compute ceiling {a.compute_ceiling_key} = {_num(a.compute_ceiling_tflops, 'g')} TFLOP/s, "
                   if a.compute_ceiling_key else "")
        console.print(f"  {a.verdict}")
        console.print(f"  {ceiling}memory ceiling {a.memory_ceiling_key} = {a.memory_ceiling_tbps:g} TB/s"
                      + (f", ridge {a.ridge_flops_per_byte:.0f} FLOP/B" if a.ridge_flops_per_byte else ""))
        if a.achievable:
            ach = a.achievable
            console.print(f"  of achievable ({ach['ceilings_file']}): compute {_num(ach['pct_compute'], '.0f')} % "
                          f"({ach['compute_ceiling_key']}), memory {_num(ach['pct_memory'], '.0f')} % "
                          f"({ach['memory_ceiling_key']})")
        if r.dominant_precision:
            console.print(f"  dominant precision {r.dominant_precision}; SM busy {_num(r.sm_busy_pct, '.0f')} %, "
                          f"issue slots busy {_num(r.issue_active_pct, '.0f')} %, "
                          f"SM active {_num(r.sm_active_pct, '.0f')} %; "
                          f"tensor pipe {_num(r.tensor_pipe_active_pct, '.0f')} %")
        for line in a.limiters:
            console.print(escape(f"  • {line}"))
        for i, lv in enumerate(a.next_levers, 1):
            console.print(escape(f"  {i}. [{lv.rule}] {lv.action}\n     expect: {lv.expected}; confirm: {lv.confirm}"))
        if r.unmeasured:
            console.print(f"  unmeasured: {', '.join(r.unmeasured)}")
    rows = frontier(items)
    if rows:
        console.print("\n[bold]Next-lever frontier[/bold] (all kernels; gain x time share / cost)")
        for i, f in enumerate(rows[:10], 1):
            console.print(escape(f"  {i}. {f.kernel} ({f.time_share_pct:.0f} % of time) [{f.rule}] {f.action}"
                                 f"\n     expect: {f.expected}; confirm: {f.confirm}"))
