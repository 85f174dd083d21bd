"""Judgement rules as data: the lines a roof is judged against, which limiter kind makes which
bound, what each stall means, and the limiter story. Every number a verdict turns on is here, and
every lever in analysis/levers/; analysis/verdict/ applies them, and bound.py holds the one piece
of judgement that is order, not a number: which roofs may be named (a pipe at its roof before the
issue slots, L2 only when it serves reuse) and the order a latency verdict is told apart in
(launch, launch and ramp, a grid under one wave, tile coverage, stalls).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Collection
from typing import Literal, NamedTuple

from ..ceilings import DeviceCeilings
from ..model import Bound, KernelRecord, Limiter, LimiterKind, Provenance, RuleResult
from ..serving import Serving

# A roof is reached ("at") from 80 % of it and approached ("near") from 60 %, measured at the clock
# the kernel ran at. Below 60 % on every roof the kernel is latency-bound. The same lines as ncu's
# SOLBottleneck rule (SpeedOfLight.py: >= 80 "High Throughput", < 60 on both "Latency Issue").
AT_ROOF_PCT = 80.0
NEAR_ROOF_PCT = 60.0
BOUNDARY_PCT = 5.0  # within this many points of a line, or of a runner-up on the other side, say both
# With no FLOP or byte counters (a provisional verdict), ncu's Memory Throughput names the memory side
# only when it leads every other unit by this many points.
LEADS_BY_PCT = 10.0
# Precision classes below this share of a kernel's FLOP need no ceiling of their own (a GEMM's few fp32
# epilogue ops must not make its %SoL unknown on a device whose fp32 peak is unsourced); they are still
# counted in its FLOP totals.
MINOR_SHARE = 0.01
# L2 is named over HBM only when it serves reuse: a stream through L2 moves 1-2x the DRAM bytes.
L2_REUSE_RATIO = 2.0
# An empty kernel takes 1.66 µs on an H200 (gpu__time_duration, docs/hopper-measurements.md §8); a kernel within
# twice that is launch overhead, whatever its figures. (RAMP_FLOOR_NS starts lower, at 1.60 µs: the faster of
# floor-raw.csv's two empty launches, 1.60 and 1.73 µs, since a floor is the least time seen.)
EMPTY_KERNEL_NS = 1_660.0
LAUNCH_BOUND_NS = 2 * EMPTY_KERNEL_NS
# Under one full wave every CTA runs alone on its SM for the whole kernel, with no second CTA to overlap
# its prologue and epilogue: ncu's SOLBottleneck "Small Grid" line (SpeedOfLight.py: waves < 1).
GRID_WAVES = 1.0
# ...and leaves at least this share of the SMs' block slots idle: 128 CTAs on 132 SMs (0.97 waves) lose 3 %,
# which no grid lever wins back; such a kernel is latency-bound on what its CTAs do (ncu: Small Grid either way)
GRID_IDLE_PCT = 10.0
# A persistent grid (one CTA a SM) whose SMs were active under this share of elapsed cycles had too few
# tiles to cover them: the grid's under-one-wave story, told by SM activity (ncu's own line is 60 %)
PERSISTENT_ACTIVE_PCT = 60.0
# The launch-and-ramp floor of a streaming kernel: the least gpu__time_duration in which a kernel moved
# as many DRAM bytes, measured on an H200 with ncu 2025.3.1 (tests/fixtures/floor-raw.csv, made by
# tests/fixtures/make/floor.sh: read-only, copy and store kernels from 64 KiB to 1 GiB, three launches
# each, and an empty kernel, L2 flushed before each; with bench/data/many.ncu-rep.gz's 300 ATen
# elementwise launches and the capture sets' ramp.ncu-rep in-place multiply, which beat those kernels
# at 1-4 MiB; bench/floor.py takes the lower convex hull in log-log of the fastest launches). Keyed by the DRAM bytes ncu counted, so a kernel whose writes stay
# in L2 is not held to bytes it never moved (the in-place multiply calibration before it stood 1.2-1.9x
# above cuBLAS's decode GEMMs). A kernel within RAMP_SLACK of the floor for its bytes is set by launch
# and ramp (filling and draining the SMs), not by its grid or its work: it gains from fewer launches
# (graphs, fusion), not from more CTAs; one faster than FLOOR_HOLDS of it shows the floor is not one
# for it, and is never called floor-bound.
RAMP_FLOOR_NS: dict[str, tuple[tuple[float, float], ...]] = {
    "h200-sxm": ((2_560, 1_600), (1_053_696, 2_496), (4_199_424, 3_936), (16_781_312, 7_808), (67_160_064, 18_912),
                 (268_509_184, 63_648), (1_073_808_384, 242_432)),
}
RAMP_SLACK = 1.25
FLOOR_HOLDS = 0.95  # a kernel faster than this share of the floor for its bytes ran under it: not floor-bound
DIVERGENCE_PCT = 20.0  # branch targets not uniform across the warp
SIMT_EFFICIENCY_PCT = 80.0  # active threads per executed instruction, % of 32
DOMINANT_STALL_PCT = 30.0  # one reason holds this share of stalled warp-cycles
TAIL_IDLE_PCT = 15.0  # SM slots idle in the last (or only) wave, as % of all wave slots
OCCUPANCY_LOW_PCT = 50.0  # theoretical occupancy at or under this is a limiter worth naming
SPILL_PCT = 0.5  # instructions spilling or filling registers, % of all: worth naming from here
# ncu's rules whose findings the report already holds and a kernel's owner can act on (ncu 2025.3.1 names)
NCU_FINDINGS = ("SharedMemoryConflicts", "UncoalescedGlobalAccess", "UncoalescedSharedAccess")

KIND_BOUND: dict[LimiterKind, Bound] = {
    "tensor": "compute", "simt": "compute", "pipe": "compute", "issue": "compute",
    "hbm": "memory", "l2": "memory", "nvlink": "memory",  # a link moves bytes: a collective at its NVLink roof
    "latency": "latency", "launch": "latency", "grid": "latency",
    "unmeasured": "unmeasured",
}
# One level up when a tensor roof is reached: the next cheaper precision (its peak over this one's).
PRECISION_STEP: dict[str, str] = {
    "tensor_tf32": "tensor_bf16", "tensor_bf16": "tensor_fp8", "tensor_fp16": "tensor_fp8", "tensor_fp8": "tensor_fp4",
}

STALL_MEANING: dict[str, str] = {
    "long_scoreboard": "waiting on global/local memory (L1TEX) results: memory latency not hidden",
    "short_scoreboard": "waiting on shared memory or special-function (MUFU) results",
    "barrier": "waiting at a CTA barrier: work between barriers is unbalanced",
    "math_pipe_throttle": "a math pipe is saturated: the kernel is at its arithmetic limit",
    "gmma": "waiting on warpgroup MMA (wgmma): the tensor pipe is the busy unit",
    "mio_throttle": "shared-memory / special-function instruction queue full",
    "lg_throttle": "too many outstanding local/global memory instructions (spills, narrow loads)",
    "wait": "fixed-latency dependencies between instructions (little ILP)",
    "not_selected": "warps were ready but another was picked: enough parallelism",
    "no_instruction": "instruction cache misses or branch targets not fetched",
    "imc_miss": "immediate constant cache misses",
    "tex_throttle": "texture/L1TEX pipe queue full",
    "branch_resolving": "waiting for branch targets to resolve (divergent control flow)",
    "dispatch_stall": "dispatcher could not issue (pipeline conflicts)",
    "drain": "waiting for memory stores to drain at exit",
    "membar": "waiting on memory barriers / fences",
    "sleeping": "warps asleep (nanosleep, named barriers)",
    "misc": "miscellaneous hardware reasons",
}
# In a warp-specialised kernel producer and consumer warpgroups wait on each other by design.
DESIGNED_STALLS = frozenset({"barrier", "gmma", "sleeping"})


TensorWork = Literal["counted", "uncounted", "none", "unknown"]
# counted: tensor FLOP collected and > 0; none: collected (or the pipe read idle) and 0; uncounted: the
# pipe or tensor instructions show work whose FLOP were not collected; unknown: nothing says either way


class Facts(NamedTuple):
    """What the story and lever rules look at: the record, the judgement, who owns the code, and
    the figures the levers size their unlock from."""

    rec: KernelRecord
    bound: Bound
    provisional: bool  # no roofline placement: the busiest unit's figures only
    limiter: Limiter
    runner_up: Limiter | None
    prov: Provenance
    top_stall: str | None
    top_stall_pct: float | None
    tail_idle_pct: float | None
    gemm_like: bool
    attention_like: bool
    split_k_reduce: bool  # cuBLASLt's splitKreduce_kernel: its GEMM's second half, judged with it
    category: str  # analysis/categories.py
    communication: bool  # a collective (NCCL, multimem, vLLM's custom all-reduce): the link and its peers set its time
    path_ratio: float | None  # the tensor path's share of the chip's peak, when under 1 (mma.sync)
    step: tuple[str, float] | None  # a cheaper tensor precision this device has, and its peak ratio
    hbm_pct: float | None  # HBM % at the measured clock (a provisional verdict: ncu's DRAM Throughput)
    ridge: float | None  # FLOP/byte where the binding compute roof meets HBM
    serving: Serving | None = None  # the serving engine's configuration, when the capture says (vLLM's flags)
    hw_key: str = ""  # the device's ceilings key, for figures measured per device (RAMP_FLOOR_NS)
    evidence: tuple[str, ...] = ()  # the figures that decided the verdict (bound.Judgement.evidence)
    tensor_work: TensorWork = "unknown"  # whether the kernel ran tensor-core math, and whether it was counted
    device: DeviceCeilings | None = None  # what the chip has: tensor cores, wgmma, fp8 (ceilings/architectures.yaml)

    @property
    def tensor_cores(self) -> bool:
        """The device has tensor cores (a GTX 16 has none; an unknown architecture is not assumed to)."""
        return self.device is not None and self.device.tensor_cores is True

    @property
    def vllm(self) -> bool:
        return self.serving is not None and self.serving.engine == "vllm"

    @property
    def in_cuda_graph(self) -> bool:
        """Launched inside a CUDA graph: vLLM replays decode in graphs unless --enforce-eager."""
        return self.serving is not None and self.serving.cuda_graphs

    def ge(self, value: float | None, limit: float) -> bool:
        return value is not None and value >= limit

    def lt(self, value: float | None, limit: float) -> bool:
        return value is not None and value < limit

    def le(self, value: float | None, limit: float) -> bool:
        return value is not None and value <= limit

    @property
    def at_roof(self) -> bool:
        """A provisional verdict's unit figure is a busy share, not a roof reached."""
        return not self.provisional and self.ge(self.limiter.pct, AT_ROOF_PCT)

    @property
    def designed_stall(self) -> bool:
        return self.prov.warp_specialised and self.top_stall in DESIGNED_STALLS

    # conditions that both a limiter story here and a lever (analysis/levers/) stand on
    @property
    def registers_limit_occupancy(self) -> bool:
        return (self.rec.occupancy_limiter or "").startswith("registers") and \
            self.le(self.rec.theoretical_occupancy_pct, OCCUPANCY_LOW_PCT)

    @property
    def smem_limits_occupancy(self) -> bool:
        return "shared_mem" in (self.rec.occupancy_limiter or "") and \
            self.le(self.rec.theoretical_occupancy_pct, OCCUPANCY_LOW_PCT)

    @property
    def tail_effect(self) -> bool:
        return self.ge(self.tail_idle_pct, TAIL_IDLE_PCT) and self.ge(self.rec.waves_per_sm, 1.0)

    @property
    def gemm_like_tensor(self) -> bool:
        """A matrix multiply on the tensor cores: a GEMM by category, or tensor work that is not attention."""
        return (self.gemm_like or (self.rec.dominant_precision or "").startswith("tensor_")) and not self.attention_like

    @property
    def spills(self) -> bool:
        return self.ge(self.rec.register_spill_pct, SPILL_PCT)

    def ncu_finding(self, rule: str) -> RuleResult | None:
        """ncu's result of one of its finding rules, when it fired (an optimization message)."""
        return next((r for r in self.rec.ncu_rules if r.rule == rule and r.kind == "optimization"), None)

    @property
    def diverged(self) -> bool:
        return self.ge(self.rec.branch_divergence_pct, DIVERGENCE_PCT) or \
            self.lt(self.rec.simt_efficiency_pct, SIMT_EFFICIENCY_PCT)


def _finding(f: Facts, rule: str) -> str:
    """ncu's own words for a finding its rules made, with its estimate beside."""
    r = f.ncu_finding(rule)
    assert r is not None
    first = r.message.split(". ")[0].rstrip(".")
    said = f" (ncu's estimate: up to {r.speedup_pct:.1f} % of this kernel's time)" if r.speedup_pct else ""
    return f"ncu {r.rule}: {r.title or first}{said}: {first}"


# What a report that lacks a figure leaves unjudged: (the levers it would decide, the figures any one of
# which decides them, the capture that has them). Said as "not judged: ..." rather than left out.
NOT_JUDGED: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("branch divergence (fix-divergence)", ("branch_divergence_pct", "simt_efficiency_pct"),
     "smsp__sass_branch_targets*, smsp__thread_inst_executed_per_inst_executed.ratio: kernelscope capture --set roofline"),
    ("what warps wait on (the stall levers)", ("warp_stalls",), "kernelscope capture --add stalls, or ncu --set full"),
    ("register spills (fix-spills)", ("register_spill_pct",),
     "sass__inst_executed_register_spilling, in the SourceCounters section of a recent ncu's --set full or detailed"),
    ("occupancy limits (the occupancy levers)", ("theoretical_occupancy_pct",), "ncu's Occupancy section"),
)


TENSOR_LEVERS = ("use-tensor-cores", "lower-precision", "quantise-operands")  # what tensor FLOP decide


def not_judged(rec: KernelRecord, tensor_work: str, tensor_cores: bool | None = None,
               offered: Collection[str] = ()) -> tuple[str, ...]:
    """The levers this report cannot decide, each with the figure it lacks and the capture that has it
    (`tensor_cores` False: the device has none, so there is no tensor work to count; `offered`: the
    levers offered anyway, on other figures, which are not said undecided)."""
    out = [f"not judged: {what}: {' / '.join(needs)} not captured ({how})"
           for what, needs, how in NOT_JUDGED if all(n in rec.unmeasured for n in needs)]
    undecided = [name for name in TENSOR_LEVERS if name not in offered]
    if tensor_work in ("uncounted", "unknown") and tensor_cores is not False and undecided:
        out.append(f"not judged: tensor-core use and a cheaper precision ({', '.join(undecided)}): tensor FLOP not "
                   "captured (sm__ops_path_tensor_src_*: kernelscope capture --set roofline)")
    return tuple(out)


class LimiterRule(NamedTuple):
    """A line of the limiter story: when it applies, and what it says."""

    name: str
    when: Callable[[Facts], bool]
    say: Callable[[Facts], str]


def _finding_rule(rule: str) -> LimiterRule:
    def when(f: Facts) -> bool:
        return f.ncu_finding(rule) is not None

    def say(f: Facts) -> str:
        return _finding(f, rule) + _not_yours(f)

    return LimiterRule(f"ncu-{rule}", when, say)


def _not_yours(f: Facts) -> str:
    """A finding inside code the user does not compile is not theirs to fix: say where the lever is."""
    return "" if f.prov.kind == "user" else f" ({f.prov.family}'s code, not yours to recompile: another kernel or its options)"


def _pct(x: float | None, unit: str = " %") -> str:
    return "unmeasured" if x is None else f"{x:.0f}{unit}"


def _stall(f: Facts) -> str:
    meaning = STALL_MEANING.get(f.top_stall or "", "")
    if f.designed_stall:
        meaning = "producer/consumer warpgroups waiting on each other: the design of a warp-specialised kernel, not a lever"
    elif f.top_stall in ("long_scoreboard", "lg_throttle") and f.limiter.kind == "hbm" and f.at_roof:
        meaning = "waiting on DRAM at its bandwidth limit: the HBM roof is what binds, not latency left unhidden"
    return f"dominant stall {f.top_stall} ({_pct(f.top_stall_pct)} of stalled warp-cycles): {meaning}"


def _communication(f: Facts) -> str:
    said = "communication kernel: the link it uses (NVLink, PCIe, the network) and when the other ranks arrive set its time"
    if f.bound == "unmeasured":
        return f"{said}; without its link's figure the verdict above does not say how near the link it runs"
    return (f"{said}: it is held to the NVLink roof, not this GPU's HBM or FLOP roofs; under the roof, the time "
            "left is waiting on peers or the protocol's latency")


LIMITERS: tuple[LimiterRule, ...] = (
    LimiterRule("communication", lambda f: f.communication, _communication),
    LimiterRule("occupancy-registers",
                lambda f: f.registers_limit_occupancy and not f.prov.warp_specialised,
                lambda f: f"occupancy limited by registers ({_pct(f.rec.registers_per_thread, '/thread')}): theoretical {_pct(f.rec.theoretical_occupancy_pct)}, achieved {_pct(f.rec.achieved_occupancy_pct)}"),
    LimiterRule("occupancy-shared-mem",
                lambda f: f.smem_limits_occupancy and not f.prov.warp_specialised,
                lambda f: f"occupancy limited by shared memory ({(f.rec.shared_mem_per_block_bytes or 0) / 1024:.1f} KiB/block as ncu reports it, driver's 1 KiB included): theoretical {_pct(f.rec.theoretical_occupancy_pct)}"),
    LimiterRule("sub-wave-grid",
                lambda f: f.lt(f.rec.waves_per_sm, 1.0) and f.ge(f.tail_idle_pct, TAIL_IDLE_PCT),
                lambda f: f"grid fills {100 * (f.rec.waves_per_sm or 0):.1f} % of one wave: {f.tail_idle_pct:.0f} % of the block slots idle the whole kernel"),
    LimiterRule("tail-effect",
                lambda f: f.tail_effect,
                lambda f: f"tail effect: {f.rec.waves_per_sm:.2f} waves, the last {100 * ((f.rec.waves_per_sm or 0) % 1):.0f} % full: {f.tail_idle_pct:.0f} % of the block slots idle over the kernel's waves"),
    LimiterRule("divergence",
                lambda f: f.diverged,
                lambda f: "branch divergence: " + ", ".join(x for x in (
                    None if f.rec.branch_divergence_pct is None else
                    f"{f.rec.branch_divergence_pct:.0f} % of branch targets not warp-uniform",
                    None if f.rec.simt_efficiency_pct is None else f"SIMT efficiency {f.rec.simt_efficiency_pct:.0f} %",
                    "branch targets not collected" if f.rec.branch_divergence_pct is None
                    and "branch_divergence_pct" in f.rec.unmeasured else None) if x)),
    LimiterRule("register-spills", lambda f: f.spills,
                lambda f: f"register spills: {f.rec.register_spill_pct:.1f} % of instructions spill or fill registers to local memory at {_pct(f.rec.registers_per_thread, ' registers a thread')}{_not_yours(f)}"),
    *(_finding_rule(rule) for rule in NCU_FINDINGS),
    LimiterRule("tile-padding",
                lambda f: (f.attention_like or f.category == "MoE") and f.rec.flops is not None
                and (f.rec.dominant_precision or "").startswith("tensor_"),
                lambda f: "counted tensor FLOP are the tiles' work, padding included: where a tile's rows are not "
                          "all real (a decode step's few query rows a KV head under GQA, a MoE expert's few routed "
                          "tokens in its M tile) the useful FLOP, FLOP/byte and compute %SoL are lower than shown, "
                          "several times so for decode"),
    LimiterRule("dominant-stall", lambda f: f.top_stall is not None, _stall),
)


@functools.lru_cache(maxsize=1024)  # a launch's levers ask it for the same bytes 3-4 times
def ramp_floor_ns(moved: float | None, hw_key: str) -> float | None:
    """The measured launch-and-ramp floor for a kernel moving `moved` DRAM bytes on this device
    (rules.RAMP_FLOOR_NS, log-log between the measured points); the near-empty kernel's time under
    the smallest point, None past the largest or without DRAM bytes."""
    points = RAMP_FLOOR_NS.get(hw_key)
    if not points or moved is None or moved > points[-1][0]:
        return None
    if moved <= points[0][0]:
        return float(points[0][1])
    for (b0, t0), (b1, t1) in zip(points, points[1:], strict=False):
        if b0 <= moved <= b1:
            return float(t0 * (t1 / t0) ** (math.log(moved / b0) / math.log(b1 / b0)))
    return None


def ramp_overhead_ns(moved: float | None, hw_key: str) -> float | None:
    """The part of the measured floor that is not moving bytes: the floor less the bytes at the
    streaming kernel's own asymptotic bandwidth (its largest measured point). Added to the bytes at
    the HBM roof, it bounds any kernel moving as many bytes (a better copy beats the ATen multiply's
    bandwidth: 89 % of HBM for copy_f4 against its 85 %), so an unlock sized from it stays an upper bound."""
    floor, points = ramp_floor_ns(moved, hw_key), RAMP_FLOOR_NS.get(hw_key)
    if floor is None or not points or moved is None:
        return None
    biggest, its_time = points[-1]
    return max(floor - moved * its_time / biggest, 0.0)
