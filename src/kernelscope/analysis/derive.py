"""Counters -> figures. Every figure is None when a counter it needs is absent, out of range (a
corrupt counter, left out by ingest), or the figure itself is out of range (model.in_range) or
outside its domain (a clock of 0), and its name goes into the record's `unmeasured` list with a
note: a missing counter is never read as 0. A ratio with a zero denominator is None too, undefined
rather than unmeasured."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from .. import catalogue as C
from ..model import OUT_OF_RANGE, KernelRecord, RawKernel, TensorPath, all_in_range, in_range


def _simt_ops(m: Mapping[str, float], op: str) -> float | None:
    """Thread-instruction count of one SASS op: the plain counter, or `--set full`'s rate form
    (per elapsed SMSP cycle) times elapsed SMSP cycles."""
    if C.SIMT_COUNT[op] in m:
        return m[C.SIMT_COUNT[op]]
    if C.SIMT_RATE[op] in m and C.SMSP_CYCLES in m:
        return round(m[C.SIMT_RATE[op]] * m[C.SMSP_CYCLES])
    return None


def _real_hfma(m: Mapping[str, float], hfma: float, hadd: float, hmul: float) -> tuple[float | None, str | None]:
    """HFMA2 threads that did fp16 math: HFMA2.MMA register moves run on the tensor pipe and are
    counted in ncu's hfma total, real half-precision math runs on the FMA pipe. So the real count
    is bounded by the FMA pipe's fp16 thread instructions (less HADD2/HMUL2)."""
    if hfma == 0 or m.get(C.HFMA2_MMA) == 0:
        return hfma, None
    if C.FP16_FMA_PIPE not in m:
        return None, "fp16 HFMA2 not separable from HFMA2.MMA register moves (counter absent)"
    real = min(hfma, max(0.0, m[C.FP16_FMA_PIPE] - hadd - hmul))
    note = None
    if real < hfma:
        note = (f"{hfma - real:,.0f} HFMA2 thread-instructions ran on the tensor pipe as HFMA2.MMA register "
                "moves: left out of fp16 FLOP")
    return real, note


BLACKWELL_ONLY = frozenset(C.group("blackwell"))


def arch(m: Mapping[str, float]) -> C.Arch:
    """Whose counter names the report holds: the device's compute capability (10 and up is
    Blackwell), else any Blackwell-only counter present."""
    if C.COMPUTE_CAPABILITY in m:
        return "blackwell" if m[C.COMPUTE_CAPABILITY] >= 10 else "hopper"
    return "blackwell" if BLACKWELL_ONLY.intersection(m) else "hopper"


def flops_by_precision(m: Mapping[str, float]) -> tuple[dict[str, float] | None, list[str], list[str]]:
    """FLOP per precision class for the classes whose counters were collected, the classes that
    were not (a class the architecture lacks, like fp4 on Hopper, is neither), and notes. None when
    no class was collected at all."""
    flops: dict[str, float] = {}
    missing: list[str] = []
    notes: list[str] = []
    names = arch(m)
    for cls, by_arch in C.TENSOR_FLOPS.items():
        metrics = by_arch[names]
        if not metrics:
            continue
        if all(n in m for n in metrics):
            flops[cls] = sum(m[n] for n in metrics)
        else:
            missing.append(cls)
    for cls, ops in C.SIMT_FLOPS.items():
        counts = {op: _simt_ops(m, op) for op, _ in ops}
        if any(c is None for c in counts.values()):
            missing.append(cls)
            continue
        if cls == "fp16":
            real, note = _real_hfma(m, counts["hfma"] or 0.0, counts["hadd"] or 0.0, counts["hmul"] or 0.0)
            if note:
                notes.append(note)
            if real is None:
                missing.append(cls)
                continue
            counts["hfma"] = real
        flops[cls] = float(sum((counts[op] or 0.0) * w for op, w in ops))
    if not flops:
        return None, missing, notes
    return flops, missing, notes


# Ratio figures and their denominators: a zero denominator makes the figure undefined, not unmeasured.
ZERO_DENOMINATORS = (("arithmetic_intensity", "dram_bytes"), ("achieved_tflops", "duration_ns"),
                     ("achieved_dram_tbps", "duration_ns"))


# Figures that a launch that ran cannot read as 0 or less: a roof is scaled by the clock it ran at.
POSITIVE = ("sm_clock_hz", "dram_clock_hz")

# The figures whose None means "not measured" (identity, lists and maps of detail are not figures), in
# field order: a record's `unmeasured` lists them in this order.
FIGURES = tuple(f.name for f in fields(KernelRecord) if f.name not in {
    "source", "launch_id", "name", "name_full", "device", "grid", "block", "flops_missing", "dominant_precision",
    "tensor_path", "ncu_rules", "unmeasured", "notes", "metrics", "block_limits"})


def _ratio(num: float | None, den: float | None) -> float | None:
    return None if num is None or den is None or den == 0 else num / den


def _pct(num: float | None, den: float | None) -> float | None:
    r = _ratio(num, den)
    return None if r is None else 100.0 * r


def _sum(m: Mapping[str, float], *names: str) -> float | None:
    return sum(m[n] for n in names) if all(n in m for n in names) else None


def _limiter(limits: Mapping[str, float]) -> str:
    low = min(limits.values())
    return "+".join(k for k, v in limits.items() if v == low)


def warp_stall_shares(m: Mapping[str, float]) -> dict[str, float] | None:
    ratios = {r: m[name] for r, name in C.STALLS.items() if name in m}
    total = sum(ratios.values())
    if len(ratios) < len(C.STALLS) or total <= 0:
        return None
    return {r: 100.0 * v / total for r, v in sorted(ratios.items(), key=lambda kv: -kv[1])}


def tensor_path(m: Mapping[str, float], tensor_flops: float) -> TensorPath | None:
    """tcgen05 (Blackwell) or wgmma (Hopper) when any such MMA ran; mma.sync when only HMMA
    instructions did (on Hopper the hmma counter also counts wgmma and HFMA2.MMA moves, so it is
    read only beside the wgmma counter, less the moves); None when the counters were not collected."""
    if tensor_flops <= 0:
        return None
    if m.get(C.TENSOR_TC_INST, 0.0) > 0:
        return "tcgen05"
    if m.get(C.TENSOR_WGMMA_INST, 0.0) > 0:
        return "wgmma"
    if C.TENSOR_TC_INST in m and m.get(C.TENSOR_SUBPIPE_HMMA_INST, 0.0) > 0:
        return "mma.sync"
    if C.TENSOR_WGMMA_INST in m and m.get(C.TENSOR_HMMA_INST, 0.0) - m.get(C.HFMA2_MMA, 0.0) > 0:
        return "mma.sync"
    return None


def _check_range(figures: dict[str, Any], notes: list[str]) -> None:
    """Null the figures out of range (a ratio over a near-zero duration, a sum of huge counters: the
    input's values overflow) or outside their domain, each with a note; one C pass in the common case."""
    numbers = [v for v in figures.values() if type(v) is float]
    numbers += [v for m in figures.values() if type(m) is dict for v in m.values()]
    if all_in_range(numbers) and all(figures[f] is None or figures[f] > 0 for f in POSITIVE):
        return
    wrong = []
    for name, v in figures.items():
        if (type(v) is float and not in_range(v)) or (type(v) is dict and not all(map(in_range, v.values()))):
            figures[name] = None
            wrong.append(name)
    if wrong:
        notes.append(f"{OUT_OF_RANGE}: {', '.join(wrong)}")
    for name in POSITIVE:
        if figures[name] is not None and figures[name] <= 0:
            notes.append(f"{name} reads {figures[name]:g}: a launch that ran had a clock, so not measured")
            figures[name] = None


def derive(raw: RawKernel) -> KernelRecord:
    m = raw.metrics
    get = m.get
    notes: list[str] = []
    flops, missing, flop_notes = flops_by_precision(m)
    notes += flop_notes
    if flops is not None and missing:
        notes.append("FLOP counters not collected for: " + ", ".join(missing) + " (their work is not counted)")
    duration = get(C.DURATION)
    dram = _sum(m, C.DRAM_READ, C.DRAM_WRITE)
    total = None if flops is None else sum(flops.values())
    dominant = max(flops, key=lambda k: flops[k]) if flops and total else None
    tensor = sum(v for k, v in (flops or {}).items() if k.startswith("tensor_"))
    limits = {k: m[v] for k, v in C.BLOCK_LIMITS.items() if v in m}
    targets, divergent = get(C.BRANCH_TARGETS), get(C.BRANCH_DIVERGENT)
    not_applicable = set()
    if targets == 0:
        notes.append("no branch instruction executed: branch divergence does not apply (0/0)")
        not_applicable.add("branch_divergence_pct")
    tpi = get(C.THREADS_PER_INST)
    pipes = {p: m[name] for p, name in C.PIPES.items() if name in m}
    if C.TENSOR_PIPE in m:
        pipes["tensor"] = m[C.TENSOR_PIPE]
    path = tensor_path(m, tensor)
    if tensor > 0 and path is None and C.TENSOR_WGMMA_INST not in m and C.TENSOR_TC_INST not in m:
        notes.append("tensor instruction path unknown (wgmma/HMMA instruction counters not collected)")
    figures: dict[str, Any] = dict(
        duration_ns=duration,
        flops=flops,
        flops_missing=tuple(missing),
        dominant_precision=dominant,
        tensor_path=path,
        dram_bytes=dram,
        l2_bytes=get(C.L2_BYTES),
        arithmetic_intensity=_ratio(total, dram),
        achieved_tflops=_ratio(total, duration * 1e3 if duration is not None else None),
        achieved_dram_tbps=_ratio(dram, duration * 1e3 if duration is not None else None),
        sm_clock_hz=get(C.SM_CLOCK),
        dram_clock_hz=get(C.DRAM_CLOCK),
        sm_busy_pct=get(C.SM_BUSY),
        memory_busy_pct=get(C.MEM_BUSY),
        sm_active_pct=_pct(get(C.SM_CYCLES_ACTIVE), get(C.SM_CYCLES_ELAPSED)),
        issue_active_pct=get(C.ISSUE_ACTIVE),
        dram_throughput_pct=next((m[n] for n in C.DRAM_PCT if n in m), None),
        l2_throughput_pct=get(C.L2_PCT),
        tensor_pipe_active_pct=get(C.TENSOR_PIPE),
        pipe_busy=pipes or None,
        achieved_occupancy_pct=get(C.OCC_ACHIEVED),
        theoretical_occupancy_pct=get(C.OCC_THEORETICAL),
        achieved_active_warps_per_sm=get(C.WARPS_ACTIVE),
        registers_per_thread=get(C.REGISTERS),
        shared_mem_per_block_bytes=_sum(m, C.SMEM_STATIC, C.SMEM_DYNAMIC, C.SMEM_DRIVER),
        shared_mem_static_bytes=get(C.SMEM_STATIC),
        shared_mem_dynamic_bytes=get(C.SMEM_DYNAMIC),
        shared_mem_driver_bytes=get(C.SMEM_DRIVER),
        occupancy_limiter=_limiter(limits) if len(limits) == len(C.BLOCK_LIMITS) else None,
        block_limits=limits if len(limits) == len(C.BLOCK_LIMITS) else None,
        waves_per_sm=get(C.WAVES),
        branch_divergence_pct=_pct(divergent, targets),
        simt_efficiency_pct=None if tpi is None else 100.0 * tpi / 32.0,
        warp_stalls=warp_stall_shares(m),
    )
    if raw.out_of_range:
        notes.append(f"counters {OUT_OF_RANGE}: {', '.join(raw.out_of_range)}")
    _check_range(figures, notes)
    for figure, denominator in ZERO_DENOMINATORS:
        if figures[denominator] == 0:
            notes.append(f"{figure} is undefined: {denominator} is 0 (x/0), so null without being unmeasured")
            not_applicable.add(figure)
    unmeasured = tuple(f for f in FIGURES if figures[f] is None and f not in not_applicable)
    return KernelRecord(source=raw.source, launch_id=raw.launch_id, name=raw.name, name_full=raw.name_full,
                        device=raw.device, grid=raw.grid, block=raw.block, **figures, ncu_rules=raw.rules,
                        unmeasured=unmeasured, notes=tuple(notes), metrics=m)
