"""Classify a placed kernel: its bound, the limiter story and the ranked next levers."""

from __future__ import annotations

import math
import re

from ..ceilings import DeviceCeilings
from ..model import Assessment, Bound, KernelRecord, Lever
from .roofline import place
from .rules import LEVERS, LIMITERS, ROOF_REACHED_PCT, Facts

GEMM_NAME = re.compile(r"gemm|nvjet|cutlass|xmma|matmul|gemv|wgmma|mma", re.IGNORECASE)


def bound_of(pct_compute: float | None, pct_memory: float | None) -> Bound:
    if pct_compute is None or pct_memory is None:
        return "unmeasured"
    if max(pct_compute, pct_memory) < ROOF_REACHED_PCT:
        return "latency"
    return "compute" if pct_compute >= pct_memory else "memory"


def tail_idle_pct(waves: float | None) -> float | None:
    """Share of SM slots left idle by a partial last wave, over all waves launched."""
    if waves is None or waves <= 0:
        return None
    full = math.ceil(waves - 1e-9)
    return 100.0 * (full - waves) / full


def _verdict_text(rec: KernelRecord, bound: str, pc: float | None, pm: float | None, ceiling: str | None) -> str:
    if bound == "unmeasured":
        missing = ", ".join(f for f in ("flops", "dram_bytes", "duration_ns") if f in rec.unmeasured)
        missing = missing or f"a ceiling ({ceiling or 'compute'})"
        busy = ""
        if rec.sm_busy_pct is not None:
            busy = f"; SM busy {rec.sm_busy_pct:.0f} % (SM throughput, not a FLOP rate)"
        return f"unmeasured: {missing} not available, no roofline verdict{busy}"
    side = "compute" if bound == "compute" else "memory" if bound == "memory" else "neither"
    return (f"{bound}-bound: {pc:.0f} % of compute SoL, {pm:.0f} % of memory SoL"
            + ("" if side != "neither" else f" (both below {ROOF_REACHED_PCT:.0f} %: latency/issue-bound)"))


def assess(rec: KernelRecord, dev: DeviceCeilings) -> Assessment:
    p = place(rec, dev)
    bound = bound_of(p.pct_sol_compute, p.pct_sol_memory)
    stalls = rec.warp_stalls or {}
    top = max(stalls, key=lambda k: stalls[k]) if stalls else None
    facts = Facts(
        rec=rec, bound=bound, pct_compute=p.pct_sol_compute, pct_memory=p.pct_sol_memory,
        top_stall=top, top_stall_pct=stalls.get(top) if top else None,
        gemm_like=bool(GEMM_NAME.search(rec.name)), tail_idle_pct=tail_idle_pct(rec.waves_per_sm),
    )
    limiters = tuple(rule.say(facts) for rule in LIMITERS if rule.when(facts))
    fired = [r for r in LEVERS if r.when(facts)]
    fired.sort(key=lambda r: (-r.gain, r.cost))
    levers = tuple(Lever(r.name, r.action, r.expected, r.confirm, r.gain, r.cost) for r in fired)
    return Assessment(
        record=rec,
        hw_key=dev.hw_key,
        compute_ceiling_key=p.compute_ceiling_key,
        memory_ceiling_key=p.memory_ceiling_key,
        compute_ceiling_tflops=p.compute_ceiling_tflops,
        memory_ceiling_tbps=p.memory_ceiling_tbps,
        ridge_flops_per_byte=p.ridge_flops_per_byte,
        pct_sol_compute=p.pct_sol_compute,
        pct_sol_memory=p.pct_sol_memory,
        bound=bound,
        verdict=_verdict_text(rec, bound, p.pct_sol_compute, p.pct_sol_memory, p.compute_ceiling_key),
        limiters=limiters + p.notes,
        next_levers=levers,
    )
