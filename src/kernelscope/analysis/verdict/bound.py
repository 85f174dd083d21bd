"""Pick the limiter among a kernel's roofs (roofs.py) by the lines in rules.py, and say why: the
figures that decided, the runner-up, and both sides when the call is near a line. The nearest
roof at or over 60 % names the limiter; under it the kernel is latency-bound, and the latency is
told apart as launch overhead, a grid under one wave, or stalls. A collective is judged against its
link alone (judge_link), never against HBM or FLOP roofs."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from ... import catalogue as C
from ...ceilings.model import called
from ...model import Bound, KernelRecord, Limiter
from ..rules import (
    AT_ROOF_PCT,
    BOUNDARY_PCT,
    EMPTY_KERNEL_NS,
    FLOOR_HOLDS,
    GRID_IDLE_PCT,
    GRID_WAVES,
    KIND_BOUND,
    L2_REUSE_RATIO,
    LAUNCH_BOUND_NS,
    NEAR_ROOF_PCT,
    PERSISTENT_ACTIVE_PCT,
    RAMP_SLACK,
)
from .placement import Placement
from .roofs import l2_share


class Judgement(NamedTuple):
    """The bound a launch is judged, what limits it, the roof after that and the figures that decided."""

    limiter: Limiter
    runner_up: Limiter | None
    bound: Bound
    verdict: str
    evidence: tuple[str, ...]
    provisional: bool = False  # no roofline placement: the busiest unit's figures, never a %SoL


def eligible(rec: KernelRecord, roofs: Sequence[Limiter]) -> list[Limiter]:
    """The roofs that may be named: a pipe at its roof is named before the issue slots its own
    instructions fill; L2 gives way to HBM unless it serves reuse (L2 bytes >= 2x DRAM bytes)."""
    pipe_full = any(r.kind == "pipe" and (r.pct or 0.0) >= AT_ROOF_PCT for r in roofs)
    has_hbm = any(r.kind == "hbm" for r in roofs)
    share = l2_share(rec)
    return [r for r in roofs
            if not (r.kind == "issue" and pipe_full)
            and not (r.kind == "l2" and has_hbm and (share is None or share < L2_REUSE_RATIO))]


def unmeasured(rec: KernelRecord, why: str) -> Limiter:
    """Neither a roofline verdict nor a provisional one: no roof figure of any unit."""
    busy = "" if rec.sm_busy_pct is None else f"; SM busy {rec.sm_busy_pct:.0f} % (SM throughput, not a FLOP rate)"
    return Limiter("unmeasured", why, "unmeasured", None, None, None, f"unmeasured: {why}, no roofline verdict{busy}")


def ctas(grid: str | None) -> int | None:
    """'(132, 1, 1)' -> 132."""
    dims = [int(d) for d in re.findall(r"\d+", grid or "")]
    return dims[0] * dims[1] * dims[2] if len(dims) == 3 else None


def tile_coverage(rec: KernelRecord) -> Limiter | None:
    """A persistent grid (one CTA a SM, each looping over tiles: FlashAttention-3, cuBLAS's and CUTLASS's
    persistent schedules) fills every block slot by construction; what leaves SMs idle is too few tiles
    to go round, read as the share of elapsed cycles the SMs were active."""
    sms, blocks, active = rec.metrics.get(C.SM_COUNT), ctas(rec.grid), rec.sm_active_pct
    if not sms or blocks != int(sms) or active is None or active >= PERSISTENT_ACTIVE_PCT:
        return None
    return Limiter("grid", C.SM_CYCLES_ACTIVE, "tiles under the SMs", None, None, None,
                   f"a persistent grid of {blocks} CTAs, one a SM, kept the SMs active {active:.0f} % of the time: "
                   f"too few tiles (work units) to cover the SMs, so {100 - active:.0f} % of SM cycles had none")


def latency(rec: KernelRecord, nearest: Limiter | None, stall: str | None, ramp_ns: float | None = None,
            measured_here: bool = True) -> Limiter:
    """No roof at 60 %: launch overhead for a kernel of a few µs or at the launch-and-ramp floor of
    its bytes, a grid under one wave, or stalls. `measured_here`: the empty kernel's time was measured
    on this GPU (an H200); elsewhere it is the H200's, said so."""
    dur, waves = rec.duration_ns, rec.waves_per_sm
    if dur is not None and dur <= LAUNCH_BOUND_NS:
        where = "(H200, docs/hopper-measurements.md §8)" if measured_here else \
            "on an H200 (docs/hopper-measurements.md §8; not measured on this GPU)"
        return Limiter("launch", C.DURATION, "launch overhead", None, None, None,
                       f"{dur / 1e3:.2f} µs on the GPU, within 2x the {EMPTY_KERNEL_NS / 1e3:.2f} µs an empty kernel "
                       f"takes {where}: the launch, not the work, sets its cost")
    # a kernel under the floor for its bytes shows the floor is not one for it: never floor-bound then
    if dur is not None and ramp_ns is not None and FLOOR_HOLDS * ramp_ns <= dur <= RAMP_SLACK * ramp_ns:
        return Limiter("launch", C.DURATION, "launch and ramp", None, None, None,
                       f"{dur / 1e3:.2f} µs for {(rec.dram_bytes or 0) / 1e6:.1f} MB: within {RAMP_SLACK:g}x the "
                       f"{ramp_ns / 1e3:.2f} µs a streaming kernel moving as many bytes takes on this GPU (measured: "
                       "launch, filling and draining the SMs set its cost, not its grid or its work)")
    if waves is not None and waves < GRID_WAVES and 100 * (1 - waves) >= GRID_IDLE_PCT:
        return Limiter("grid", C.WAVES, "grid under one wave", None, None, None,
                       f"{waves:.2f} waves: {100 * (1 - waves):.0f} % of the SMs' block slots get no block")
    covered = tile_coverage(rec)
    if covered is not None:
        return covered
    near = "no roof figures" if nearest is None else f"nearest roof: {nearest.name} {nearest.pct:.0f} %"
    return Limiter("latency", C.STALLS.get(stall or "", ""), "latency", None, None, None,
                   f"no roof reaches {NEAR_ROOF_PCT:.0f} % ({near}); top stall {stall or 'not collected'}")


def boundary(lim: Limiter, runner: Limiter | None) -> str:
    """Both sides, when the call is within BOUNDARY_PCT points of a line or of a rival roof."""
    b, said = BOUNDARY_PCT, []
    rival = runner.pct if runner is not None and runner.pct is not None else None
    if lim.pct is None:
        if runner is not None and rival is not None and rival >= NEAR_ROOF_PCT - b:
            said.append(f"near the {NEAR_ROOF_PCT:.0f} % line: {runner.name} {rival:.1f} % is just under it, "
                        "so latency is named; a little more throughput would make that roof the limiter")
        return "; ".join(said)
    if lim.pct < NEAR_ROOF_PCT + b:
        said.append(f"near the {NEAR_ROOF_PCT:.0f} % line: {lim.name} {lim.pct:.1f} % names the limiter; "
                    f"under {NEAR_ROOF_PCT:.0f} % the kernel would read latency-bound")
    if abs(lim.pct - AT_ROOF_PCT) < b:
        side = "at" if lim.pct >= AT_ROOF_PCT else "near"
        said.append(f"near the {AT_ROOF_PCT:.0f} % line: {lim.pct:.1f} % reads {side} the roof; "
                    f"levers one level up (precision, batching, fusion) lead from {AT_ROOF_PCT:.0f} %")
    if runner is not None and rival is not None and KIND_BOUND[runner.kind] != KIND_BOUND[lim.kind] \
            and lim.pct - rival < b:
        said.append(f"balanced: {lim.name} {lim.pct:.0f} % vs {runner.name} {rival:.0f} %; the higher is named, "
                    "and a lever on either side moves the other")
    return "; ".join(said)


def how_close(lim: Limiter, from_report: frozenset[str] = frozenset()) -> str:
    """'93 % at the measured 1610 MHz (82 % of the datasheet figure)', or a per-cycle share;
    `from_report`: the keys of roofs derived from the report, which are no datasheet's."""
    sheet = called(lim.key.partition("@")[0] in from_report)
    if lim.kind == "nvlink":
        return f"{lim.pct:.0f} % of it (the link's own rate: no clock to scale to)"
    if lim.pct_datasheet is None:
        return f"{lim.pct:.0f} % busy over elapsed cycles"
    if lim.clock_hz is None:
        return f"{lim.pct:.0f} % of it at the {sheet} clock (the measured clock is not known)"
    return (f"{lim.pct:.0f} % of it at the measured {lim.clock_hz / 1e6:.0f} MHz "
            f"({lim.pct_datasheet:.0f} % of the {sheet} figure)")


def flop_coverage(rec: KernelRecord, bound: Bound, lim: Limiter, at_most: Mapping[str, float]) -> str:
    """Whether the verdict stands when some FLOP classes were not collected: uncounted work can only
    raise the compute %SoL, so a compute verdict on a FLOP roof stands, as does one that the missing
    classes' most possible work (`at_most`: class -> % of its peak) cannot reach; any other may move."""
    if not rec.flops_missing or bound == "unmeasured":
        return ""
    said = f"FLOP not collected for {', '.join(rec.flops_missing)}"
    if lim.kind in ("tensor", "simt"):
        return f"{said}: the verdict stands, since uncounted work can only raise the compute %SoL"
    line = min(NEAR_ROOF_PCT, lim.pct if lim.pct is not None else NEAR_ROOF_PCT)
    if set(rec.flops_missing) <= set(at_most) and max(at_most.values()) < line:
        shown = {f"{pct:.1f}" for pct in at_most.values()}
        most = (f"each at most {shown.pop()} % of its peak" if len(at_most) > 1 and len(shown) == 1
                else ", ".join(f"{c} at most {pct:.1f} % of its peak" for c, pct in at_most.items()))
        return f"{said} ({most}): the verdict stands"
    return f"{said}: the verdict may move, since uncounted work would raise the compute %SoL"


def _launch_line(rec: KernelRecord) -> str:
    """A latency verdict within BOUNDARY_PCT % of the launch-overhead line, either side: a twin launch
    a little slower or faster reads the other way, so the line is said."""
    dur = rec.duration_ns
    if dur is None or abs(dur / LAUNCH_BOUND_NS - 1) * 100 > BOUNDARY_PCT:
        return ""
    side, twin = ("under", "slower is judged on what it does") if dur <= LAUNCH_BOUND_NS else \
        ("over", "faster is judged launch overhead")
    off = 100 * abs(dur / LAUNCH_BOUND_NS - 1)
    return (f"; {dur / 1e3:.2f} µs is {off:.0f} % {side} the {LAUNCH_BOUND_NS / 1e3:.2f} µs launch-overhead line: "
            f"a twin launch a little {twin}")


def _verdict(rec: KernelRecord, lim: Limiter, bound: Bound, runner: Limiter | None, line: str,
             from_report: frozenset[str] = frozenset()) -> str:
    near = "" if runner is None or runner.pct is None else f"; nearest roof: {runner.name} {runner.pct:.0f} %"
    if lim.pct is not None:
        where = "at" if lim.pct >= AT_ROOF_PCT else "near"
        text = f"{bound}-bound {where} the {lim.name}: {how_close(lim, from_report)}"
    elif lim.kind == "launch":
        text = f"latency-bound: {lim.name} ({lim.reading.split(':')[0]}{near}{_launch_line(rec)})"
    elif lim.kind == "grid" and lim.name == "tiles under the SMs":
        text = f"latency-bound: tiles under the SMs ({lim.reading.split(':')[0]}{near})"
    elif lim.kind == "grid":
        text = f"latency-bound: grid under one wave ({rec.waves_per_sm:.2f} waves{near}{_launch_line(rec)})"
    else:
        text = f"latency-bound: no roof reaches {NEAR_ROOF_PCT:.0f} %{near}"
    return text + (f" — {line}" if line else "")


def judge(rec: KernelRecord, p: Placement, roofs: Sequence[Limiter], top_stall: str | None,
          unsettled: str | None = None, at_most: Mapping[str, float] | None = None,
          ramp_ns: float | None = None, measured_here: bool = True,
          from_report: frozenset[str] = frozenset()) -> Judgement:
    """`unsettled`: why the report cannot place the kernel on the roofline (roofs.unsettled); the
    verdict is then provisional, from the per-unit figures in `roofs`, and unmeasured when there is
    neither a unit's figure nor a launch figure to go on."""
    ranked = eligible(rec, roofs)
    top = ranked[0] if ranked else None
    if top is not None and (top.pct or 0.0) >= NEAR_ROOF_PCT:
        lim, runner = top, (ranked[1] if len(ranked) > 1 else None)
    else:
        lim, runner = latency(rec, top, top_stall, ramp_ns, measured_here), top
    bound = KIND_BOUND[lim.kind]
    if unsettled is not None and lim.kind == "hbm" and lim.pct_datasheet is not None:
        # measured bytes over time at the HBM roof need no FLOP: memory-bound, the compute side unmeasured
        line = f"compute side unmeasured: {unsettled}"
        evidence = [lim.reading] + [r.reading for r in roofs if r is not lim][:4] + [line]
        return Judgement(lim, runner, bound, _verdict(rec, lim, bound, runner, line, from_report), tuple(evidence))
    if unsettled is not None:
        if not roofs and lim.kind == "latency":
            missing = unmeasured(rec, unsettled)
            return Judgement(missing, None, "unmeasured", missing.reading, (missing.reading,))
        said = (f"{bound}-side: the {lim.name} is the busiest unit at {lim.pct:.0f} % of its peak"
                if lim.pct is not None else _verdict(rec, lim, bound, runner, "", from_report))
        text = (f"provisional {said} — {unsettled}, so no roof and no %SoL: a capture with FLOP and DRAM byte "
                "counters (kernelscope capture --set roofline, or ncu --set full) settles it")
        said_too = (lim.reading, *[r.reading for r in roofs if r is not lim][:4], f"provisional: {unsettled}")
        return Judgement(lim, runner, bound, text, said_too, True)
    lines = [x for x in (boundary(lim, runner), flop_coverage(rec, bound, lim, at_most or {})) if x]
    evidence = [lim.reading] + [r.reading for r in roofs if r is not lim][:4] + lines
    return Judgement(lim, runner, bound, _verdict(rec, lim, bound, runner, " — ".join(lines), from_report),
                     tuple(evidence))


def judge_workload(rec: KernelRecord) -> Judgement:
    """A result that is not one kernel (`--graph-profiling graph`: a whole CUDA graph, its kernels run
    as one workload): its time is the graph's, and no kernel verdict stands for the kernels inside it."""
    dur = "duration unmeasured" if rec.duration_ns is None else f"{rec.duration_ns / 1e3:.1f} µs on the GPU"
    said = (f"a whole CUDA {rec.workload}, not one kernel: {dur} for every kernel node in it (ncu "
            "--graph-profiling graph); no kernel verdict: capture its kernels with --graph-profiling node for theirs")
    lim = Limiter("unmeasured", C.DURATION, f"CUDA {rec.workload}", None, None, None, said)
    return Judgement(lim, None, "unmeasured", said, (said,))


def judge_graph_mode(rec: KernelRecord) -> Judgement:
    """A kernel launched outside the graphs of a `--graph-profiling graph` capture: ncu times it in that
    mode with the graphs' machinery around it (one-block kernels read 157-317 µs with the SMs active
    0.05 % of it, tests/fixtures/vllm graph30), so its duration and every rate from it are not its own."""
    dur = "unknown" if rec.duration_ns is None else f"{rec.duration_ns / 1e3:.1f} µs"
    said = (f"not judged: profiled under --graph-profiling graph, where ncu's duration of a launch outside the "
            f"graphs ({dur}) is not the kernel's own time; capture it with --graph-profiling node (ncu's default)")
    lim = Limiter("unmeasured", C.DURATION, "unmeasured", None, None, None, said)
    return Judgement(lim, None, "unmeasured", said, (said,))


def judge_link(rec: KernelRecord, roof: Limiter | None, why: str) -> Judgement:
    """A collective against its link: bound at the NVLink roof from 60 % of it, else latency (the
    peers' arrival, the protocol's latency or the launch set its time, not the link's bandwidth);
    with no NVLink figure, unmeasured, saying `why` and what capture gives one: the GPU's own HBM and
    FLOP roofs are not its limit, so no verdict on them stands in."""
    if roof is None or roof.pct is None:
        missing = Limiter("unmeasured", C.NVL_RX, "unmeasured", None, None, None,
                          f"unmeasured: a collective is judged against its link, and {why}")
        return Judgement(missing, None, "unmeasured", missing.reading, (missing.reading,))
    if roof.pct >= NEAR_ROOF_PCT:
        lim, runner = roof, None
    else:
        lim, runner = Limiter("latency", C.DURATION, "latency", None, None, None,
                              f"NVLink at {roof.pct:.0f} % of its roof, under {NEAR_ROOF_PCT:.0f} %: the link's "
                              "bandwidth does not set its time; the peers' arrival, the protocol's latency or the "
                              "launch do"), roof
    bound = KIND_BOUND[lim.kind]
    line = boundary(lim, runner)
    evidence = [lim.reading] + ([roof.reading] if lim is not roof else []) + ([line] if line else [])
    return Judgement(lim, runner, bound, _verdict(rec, lim, bound, runner, line), tuple(evidence))
