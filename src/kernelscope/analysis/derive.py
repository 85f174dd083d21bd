"""Counters -> figures. Every figure is None when any counter it needs is absent, and its name
goes into the record's `unmeasured` list: a missing counter is never read as 0."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from .. import catalogue as C
from ..model import KernelRecord, RawKernel


def _simt_ops(m: Mapping[str, float], op: str) -> float | None:
    """Thread-instruction count of one SASS op: the plain counter, or `--set full`'s rate form
    (per elapsed SMSP cycle) times elapsed SMSP cycles."""
    if C.simt_count(op) in m:
        return m[C.simt_count(op)]
    if C.simt_rate(op) in m and C.SMSP_CYCLES in m:
        return round(m[C.simt_rate(op)] * m[C.SMSP_CYCLES])
    return None


def flops_by_precision(m: Mapping[str, float]) -> tuple[dict[str, float] | None, list[str]]:
    """FLOP per precision class, or None if any class's counters are missing (a partial split
    would under-count work and inflate nothing visibly, so we do not guess)."""
    flops: dict[str, float] = {}
    missing: list[str] = []
    for cls, metric in C.TENSOR_FLOPS.items():
        if metric in m:
            flops[cls] = m[metric]
        else:
            missing.append(cls)
    for cls, ops in C.SIMT_FLOPS.items():
        counts = [(_simt_ops(m, op), weight) for op, weight in ops]
        if any(c is None for c, _ in counts):
            missing.append(cls)
        else:
            flops[cls] = float(sum(c * w for c, w in counts if c is not None))
    return (None if missing else flops), missing


def _ratio(num: float | None, den: float | None) -> float | None:
    return None if num is None or den is None or den == 0 else num / den


def _pct(num: float | None, den: float | None) -> float | None:
    r = _ratio(num, den)
    return None if r is None else 100.0 * r


def _limiter(limits: Mapping[str, float]) -> str:
    low = min(limits.values())
    return "+".join(k for k, v in limits.items() if v == low)


def warp_stall_shares(m: Mapping[str, float]) -> dict[str, float] | None:
    ratios = {r: m[C.stall_metric(r)] for r in C.STALL_REASONS if C.stall_metric(r) in m}
    total = sum(ratios.values())
    if len(ratios) < len(C.STALL_REASONS) or total <= 0:
        return None
    return {r: 100.0 * v / total for r, v in sorted(ratios.items(), key=lambda kv: -kv[1])}


def derive(raw: RawKernel) -> KernelRecord:
    m = raw.metrics
    get = m.get
    unmeasured: list[str] = []
    notes: list[str] = []

    def need(figure: str, value: object) -> None:
        if value is None:
            unmeasured.append(figure)

    flops, missing_classes = flops_by_precision(m)
    if missing_classes and len(missing_classes) < len(C.TENSOR_FLOPS) + len(C.SIMT_FLOPS):
        notes.append("FLOP counters missing for: " + ", ".join(missing_classes))
    duration = get(C.DURATION)
    dram = None
    if C.DRAM_READ in m and C.DRAM_WRITE in m:
        dram = m[C.DRAM_READ] + m[C.DRAM_WRITE]
    total = None if flops is None else sum(flops.values())
    dominant = None
    if flops is not None and total:
        dominant = max(flops, key=lambda k: flops[k])
    limits = {k: m[v] for k, v in C.BLOCK_LIMITS.items() if v in m}
    smem = None
    if C.SMEM_STATIC in m and C.SMEM_DYNAMIC in m:
        smem = m[C.SMEM_STATIC] + m[C.SMEM_DYNAMIC]
    uniform = get(C.BRANCH_UNIFORM)
    tpi = get(C.THREADS_PER_INST)
    record = KernelRecord(
        source=raw.source,
        launch_id=raw.launch_id,
        name=raw.name,
        name_full=raw.name_full,
        device=raw.device,
        grid=raw.grid,
        block=raw.block,
        duration_ns=duration,
        flops=flops,
        dominant_precision=dominant,
        dram_bytes=dram,
        arithmetic_intensity=_ratio(total, dram),
        achieved_tflops=_ratio(total, duration * 1e3 if duration is not None else None),
        achieved_dram_tbps=_ratio(dram, duration * 1e3 if duration is not None else None),
        sm_busy_pct=get(C.SM_BUSY),
        sm_active_pct=_pct(get(C.SM_CYCLES_ACTIVE), get(C.SM_CYCLES_ELAPSED)),
        issue_active_pct=get(C.ISSUE_ACTIVE),
        dram_throughput_pct=next((m[n] for n in C.DRAM_PCT if n in m), None),
        tensor_pipe_active_pct=get(C.TENSOR_PIPE),
        achieved_occupancy_pct=get(C.OCC_ACHIEVED),
        theoretical_occupancy_pct=get(C.OCC_THEORETICAL),
        achieved_active_warps_per_sm=get(C.WARPS_ACTIVE),
        registers_per_thread=get(C.REGISTERS),
        shared_mem_per_block_bytes=smem,
        occupancy_limiter=_limiter(limits) if len(limits) == len(C.BLOCK_LIMITS) else None,
        block_limits=limits if len(limits) == len(C.BLOCK_LIMITS) else None,
        waves_per_sm=get(C.WAVES),
        branch_divergence_pct=None if uniform is None else 100.0 - uniform,
        simt_efficiency_pct=None if tpi is None else 100.0 * tpi / 32.0,
        warp_stalls=warp_stall_shares(m),
        notes=tuple(notes),
    )
    for figure in (
        "duration_ns", "flops", "dram_bytes", "arithmetic_intensity", "achieved_tflops",
        "achieved_dram_tbps", "sm_busy_pct", "sm_active_pct", "issue_active_pct", "dram_throughput_pct",
        "tensor_pipe_active_pct",
        "achieved_occupancy_pct", "theoretical_occupancy_pct", "achieved_active_warps_per_sm",
        "registers_per_thread", "shared_mem_per_block_bytes", "occupancy_limiter", "waves_per_sm",
        "branch_divergence_pct", "simt_efficiency_pct", "warp_stalls",
    ):
        need(figure, getattr(record, figure))
    return replace(record, unmeasured=tuple(unmeasured))
