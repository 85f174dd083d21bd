"""Levers as data: when each applies, who can pull it (its family against the kernel's owner,
provenance.py), the action, the expected unlock sized from the kernel's own figures, the cost, and
the metric and capture that confirm it. levers() ranks what fires by the time it would save per
unit of cost, then gain per cost.
Unlocks are upper bounds (the roof the lever aims at), never promises.

One module a kind of kernel or limit, each rule written out with its fields named:

- gemm.py: matmuls on the tensor cores (GEMM, MoE, attention's matmuls): MMA path, precision, rows, algorithm
- attention.py: the KV cache decode attention streams
- elementwise.py: memory streams with no tensor work: fuse them away, halve their bytes, stream them once
- collectives.py: NCCL and custom all-reduce, and the only levers a collective gets
- launch.py: kernels too small for the GPU: CUDA graphs, fused launches, more work a launch, the grid
- source.py: the user's own kernel code: instructions, stalls, occupancy, spills, access patterns
- capture.py: measure again first: no roofline counters, no stalls, a kernel inside a CUDA graph
- common.py: LeverRule, PULLABLE, and the helpers more than one family uses

LEVERS below gathers them in one order: ranking ties keep it (levers() sorts stably).
"""

from __future__ import annotations

from ...model import Lever, ProvenanceKind
from ..rules import Facts, ramp_floor_ns
from . import attention, capture, collectives, elementwise, gemm, launch, source
from .collectives import COMMUNICATION_LEVERS
from .common import NSYS, PULLABLE, LeverRule, mb, took, unsized

WORTH_X = 1.05  # a lever sized to gain less than this is not offered

# The order every rule is tried in, and so the order of levers that rank equal.
LEVERS: tuple[LeverRule, ...] = (
    capture.RECAPTURE_ROOFLINE,
    gemm.VLLM_MOE_CONFIG,
    gemm.WGMMA_KERNEL,
    gemm.LOWER_PRECISION,
    gemm.AT_ROOF_BATCH,
    gemm.QUANTISE_OPERANDS,
    attention.KV_CACHE_FP8,
    gemm.BATCH_ROWS,
    elementwise.FUSE_AWAY,
    elementwise.BF16_STORAGE,
    elementwise.GENERATE_IN_CONSUMER,
    source.TRITON_RETUNE,
    gemm.LIBRARY_GEMM,
    source.FIX_SPILLS,
    source.FIX_BANK_CONFLICTS,
    source.COALESCE_GLOBAL,
    source.BYTES_IN_FLIGHT,
    gemm.ANOTHER_ALGORITHM,
    source.FIX_DIVERGENCE,
    source.CUT_INSTRUCTIONS,
    elementwise.STREAM_ONCE,
    elementwise.STREAM_ONCE_SOURCE,
    gemm.SPLIT_K_REDUCE,
    collectives.SHRINK_COMMUNICATION,
    launch.VLLM_CUDA_GRAPHS,
    launch.CUDA_GRAPH,
    gemm.VLLM_SPECULATIVE,
    capture.PROFILE_THE_GRAPH,
    launch.FUSE_LAUNCH,
    launch.MORE_WORK_A_LAUNCH,
    launch.MORE_CTAS,
    launch.FILL_THE_GRID,
    source.HIDE_MEMORY_LATENCY,
    source.RAISE_OCCUPANCY_REGISTERS,
    source.RAISE_OCCUPANCY_SMEM,
    launch.FIX_TAIL,
    source.BALANCE_BARRIERS,
    gemm.USE_TENSOR_CORES,
    capture.RECAPTURE_STALLS,
)

# The rules tried on a kernel, by its owner and whether it is a collective: those the owner can pull, and
# for a collective (not tuned like a GEMM or a stream) only the levers on the collective itself
TRIED: dict[tuple[ProvenanceKind, bool], tuple[LeverRule, ...]] = {
    (kind, communication): tuple(r for r in LEVERS if r.family in families
                                 and (not communication or r.name in COMMUNICATION_LEVERS))
    for kind, families in PULLABLE.items() for communication in (False, True)}

# When nothing the owner can pull fired, the levers outside the kernel are left.
FALLBACK = LeverRule(
    name="fuse-or-batch",
    family="fusion",
    when=lambda f: True,
    action=lambda f: ("fuse it with neighbouring kernels or batch more work a launch: "
                      "the levers left outside this kernel"),
    expected=lambda f: f"saves launches and DRAM round trips around its {took(f)}",
    unlock=unsized,
    confirm=f"total time of the step falls: {NSYS}",
    gain=1,
    cost=2,
)


# The share of a kernel's time a lever saves: 1 - 1/unlock where the unlock is sized, else by its
# gain level. Times the kernel's share of the run, over the cost, it ranks the frontier (frontier.py).
SAVED_BY_GAIN = {3: 0.5, 2: 0.25, 1: 0.1}


def saved_fraction(gain: int, unlock_x: float | None) -> float:
    """The fraction of the kernel's own time the lever is expected to save."""
    if unlock_x is not None and unlock_x > 1.0:
        return 1.0 - 1.0 / unlock_x
    return SAVED_BY_GAIN.get(gain, 0.1)


# levers that keep the kernel's DRAM bytes (another algorithm, its tiles, its source): the floor for those
# bytes bounds them; a cheaper precision, more rows or fusion change the bytes and so the floor
SAME_BYTES = frozenset({"algorithm", "kernel", "config", "source", "compiler"})


def _within_floor(f: Facts, x: float | None) -> float | None:
    """No kernel moving these DRAM bytes runs faster than the measured launch-and-ramp floor for them
    (rules.RAMP_FLOOR_NS): every unlock is bounded by it, whatever roof it was sized from."""
    floor = ramp_floor_ns(f.rec.dram_bytes, f.hw_key)
    if x is None or floor is None or not f.rec.duration_ns:
        return x
    return min(x, max(f.rec.duration_ns / floor, 1.0))


def _capped(f: Facts, raw: float | None, x: float | None) -> str:
    if raw is None or x is None or x >= raw - 1e-9:
        return ""
    floor = ramp_floor_ns(f.rec.dram_bytes, f.hw_key) or 0.0
    return (f"; at most {x:.2f}x: a launch moving its {mb(f.rec.dram_bytes)} takes at least {floor / 1e3:.1f} µs on "
            "this GPU (the measured launch-and-ramp floor)")


def levers(f: Facts) -> tuple[Lever, ...]:
    """The rules that fire and that the kernel's owner can pull, best first: by saved fraction /
    cost, the order the frontier ranks them in within one kernel (frontier.py), so a kernel's first
    lever is the one the frontier puts first for it."""
    fired = [r for r in TRIED[f.prov.kind, f.communication] if r.when(f)]
    sized = [(r, r.unlock(f)) for r in fired]
    bounded = [(r, raw, _within_floor(f, raw) if r.family in SAME_BYTES else raw) for r, raw in sized]
    kept = [(r, raw, x) for r, raw, x in bounded if x is None or x >= WORTH_X] or [(FALLBACK, None, None)]
    out = [Lever(r.name, r.family, r.action(f), r.expected(f) + _capped(f, raw, x),
                 r.confirm if isinstance(r.confirm, str) else r.confirm(f), r.gain, r.cost, x) for r, raw, x in kept]
    return tuple(sorted(out, key=lambda lv: (-saved_fraction(lv.gain, lv.unlock_x) / lv.cost, -lv.gain / lv.cost)))
