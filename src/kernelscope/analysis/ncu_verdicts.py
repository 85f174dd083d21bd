"""ncu's own verdicts beside ours: its SOLBottleneck title and the launch, occupancy, pipe and issue
rules that fired, whether they agree with our bound, and when they do not, why, in one line.

ncu's SOLBottleneck (SpeedOfLight.py in ncu 2025.3.1, docs/hopper-measurements.md §4) weighs two figures, SM
throughput and memory throughput, each the busiest unit of a breakdown over elapsed cycles, against
lines at 60 % and 80 %. We hold each roof on its own (a FLOP rate at the measured clock and the
kernel's tensor path, HBM, L2, each pipe), so the two part where one unit's figure differs.
"""

from __future__ import annotations

from ..model import Bound, KernelRecord, Limiter, LimiterKind, NcuVerdict
from .rules import NEAR_ROOF_PCT

# SOLBottleneck's titles, and the bounds of ours each agrees with
AGREES_WITH: dict[str, frozenset[Bound]] = {
    "High Throughput": frozenset({"compute", "memory"}),
    "High Compute Throughput": frozenset({"compute"}),
    "High Memory Throughput": frozenset({"memory"}),
    "Balanced Throughput": frozenset({"compute", "memory"}),
    "Latency Issue": frozenset({"latency"}),
    "Small Grid": frozenset({"latency"}),
}
SHOWN_RULES = ("LaunchConfiguration", "TheoreticalOccupancy", "AchievedOccupancy", "HighPipeUtilization",
               "IssueSlotUtilization", "SlowPipeLimiter", "ThreadDivergence")
# Where our reading of a roof differs from ncu's two figures
OURS_HOW: dict[LimiterKind, str] = {
    "tensor": "FLOP held to the tensor peak at the measured clock and the kernel's instruction path",
    "simt": "FLOP held to the SIMT peak at the measured clock",
    "hbm": "DRAM bytes held to the HBM peak at the measured memory clock",
    "l2": "lts__throughput (left out of the breakdown behind ncu's memory figure, gpu__compute_memory_throughput)",
    "pipe": "one pipe's busy cycles over elapsed cycles",
    "issue": "issue-slot cycles over elapsed cycles",
    "nvlink": "a collective's NVLink bytes held to the link's bandwidth (ncu's SM and memory figures leave it out)",
}


def _fired(rec: KernelRecord) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for r in rec.ncu_rules:
        if r.rule in SHOWN_RULES and r.kind in ("optimization", "ok"):
            seen[f"{r.rule}: {r.title}" if r.title else r.rule] = None
    return tuple(seen)


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.0f} %"


def _ours(bound: Bound, lim: Limiter, runner: Limiter | None) -> str:
    if lim.pct is not None:
        return f"{bound}, {lim.name} {lim.pct:.0f} %"
    near = "" if runner is None or runner.pct is None else f"nearest roof {runner.name} {runner.pct:.0f} %"
    return ", ".join(x for x in (bound, "" if lim.kind == "latency" else lim.name, near) if x)


def _why(rec: KernelRecord, title: str, lim: Limiter) -> str:
    """One line on why ours differs from ncu's title."""
    sm, mem = rec.sm_busy_pct, rec.memory_busy_pct
    if sm is None or mem is None:
        return "ncu's SM and memory figures are not both in the report: what its title weighed cannot be shown"
    if lim.pct is not None and AGREES_WITH[title] == frozenset({"latency"}):
        return (f"ncu's two figures are both under {NEAR_ROOF_PCT:.0f} %, but {OURS_HOW[lim.kind]} reads "
                f"{lim.pct:.0f} %")
    if lim.pct is not None:
        side = "SM" if sm >= mem else "memory"
        return (f"ncu ranks {side} first ({max(sm, mem):.0f} % vs {min(sm, mem):.0f} %); by its own roof "
                f"({OURS_HOW[lim.kind]}) ours is nearer")
    side, figure = ("SM", sm) if sm >= mem else ("memory", mem)
    pinned = " (a tensor pipe pinned by mma.sync runs at 2/3 of the FLOP peak)" if rec.tensor_path == "mma.sync" else ""
    return (f"ncu's {side} figure ({figure:.0f} %) is its busiest unit's cycles, which a unit can fill without "
            f"its work nearing a roof{pinned}; none of our roofs reaches {NEAR_ROOF_PCT:.0f} %")


# Older ncu (2020-2021) writes SOLBottleneck's result with an empty title: its message says which
# (the wording of each title's message, SpeedOfLight.py; docs/hopper-measurements.md §4)
TITLE_OF_MESSAGE = (
    ("grid is too small to fill", "Small Grid"),
    ("low compute throughput and memory bandwidth utilization", "Latency Issue"),
    ("greater than 80.0% of the available compute or memory", "High Throughput"),
    ("well-balanced", "Balanced Throughput"),
    ("more heavily utilized than Memory", "High Compute Throughput"),
    ("more heavily utilized than Compute", "High Memory Throughput"),
)


def _title(rec: KernelRecord) -> tuple[str | None, str]:
    """SOLBottleneck's title, and how it was read: as written, or (no title written) from its message."""
    for r in rec.ncu_rules:
        if r.rule != "SOLBottleneck":
            continue
        if r.title in AGREES_WITH:
            return r.title, ""
        if not r.title:
            found = next((title for words, title in TITLE_OF_MESSAGE if words in r.message), None)
            if found:
                return found, " (this ncu wrote no title: read from its message)"
    return None, ""


def compare(rec: KernelRecord, bound: Bound, lim: Limiter, runner: Limiter | None) -> NcuVerdict:
    title, how = _title(rec)
    fired = _fired(rec)
    if title is None:
        return NcuVerdict(None, fired, None, "no SOLBottleneck result in the report (captured without ncu's "
                                            "SpeedOfLight section: kernelscope capture --add sol)")
    ncu = f"ncu: SM {_pct(rec.sm_busy_pct)}, memory {_pct(rec.memory_busy_pct)} → {title}{how}"
    if bound == "unmeasured":
        return NcuVerdict(title, fired, None, f"{ncu}; not compared: ours is unmeasured (no FLOP or DRAM byte "
                                              "counters), and ncu's figures are unit throughputs, not FLOP rates")
    ours = _ours(bound, lim, runner)
    if bound in AGREES_WITH[title]:
        return NcuVerdict(title, fired, True, f"{ncu}; ours: {ours}: agree")
    return NcuVerdict(title, fired, False, f"{ncu}; ours: {ours}: {_why(rec, title, lim)}")
