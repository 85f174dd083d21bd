"""Verdict rules as data: the bound thresholds, what each stall means, the limiter story and the
next levers. Read this file to know every judgement kernelscope makes; verdict.py only applies it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..model import KernelRecord

# A roof is "reached" at this % of SoL. Below it on both roofs the kernel is latency-bound.
# Same threshold ncu's SOLBottleneck rule uses (< 60 % of peak "typically indicates latency issues").
ROOF_REACHED_PCT = 60.0
LOW_TENSOR_PIPE_PCT = 5.0  # a GEMM-class kernel below this is not using its tensor cores
DIVERGENCE_PCT = 20.0  # branch targets not uniform across the warp
SIMT_EFFICIENCY_PCT = 80.0  # active threads per executed instruction, % of 32
DOMINANT_STALL_PCT = 30.0  # one reason holds this share of stalled warp-cycles
TAIL_IDLE_PCT = 15.0  # SM slots idle in the last wave, as % of all wave slots

STALL_MEANING: dict[str, str] = {
    "long_scoreboard": "waiting on global/local memory (L1TEX) results: memory latency not hidden",
    "short_scoreboard": "waiting on shared memory or special-function (MUFU) results",
    "barrier": "waiting at __syncthreads: work between barriers is unbalanced",
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


@dataclass(frozen=True)
class Facts:
    """What the rules look at: the record, its %SoL and bound, and the dominant stall."""

    rec: KernelRecord
    bound: str
    pct_compute: float | None
    pct_memory: float | None
    top_stall: str | None
    top_stall_pct: float | None
    gemm_like: bool
    tail_idle_pct: float | None

    def ge(self, value: float | None, limit: float) -> bool:
        return value is not None and value >= limit

    def lt(self, value: float | None, limit: float) -> bool:
        return value is not None and value < limit


@dataclass(frozen=True)
class LeverRule:
    name: str
    when: Callable[[Facts], bool]
    action: str
    expected: str
    confirm: str
    gain: int  # 3 high, 2 medium, 1 low
    cost: int  # 1 low, 2 medium, 3 high


@dataclass(frozen=True)
class LimiterRule:
    name: str
    when: Callable[[Facts], bool]
    say: Callable[[Facts], str]


def _pct(x: float | None) -> str:
    return "unmeasured" if x is None else f"{x:.0f} %"


LIMITERS: tuple[LimiterRule, ...] = (
    LimiterRule("occupancy-registers",
                lambda f: (f.rec.occupancy_limiter or "").startswith("registers") and f.lt(f.rec.theoretical_occupancy_pct, 50),
                lambda f: f"occupancy limited by registers ({f.rec.registers_per_thread:.0f}/thread): theoretical {_pct(f.rec.theoretical_occupancy_pct)}, achieved {_pct(f.rec.achieved_occupancy_pct)}"),
    LimiterRule("occupancy-shared-mem",
                lambda f: "shared_mem" in (f.rec.occupancy_limiter or "") and f.lt(f.rec.theoretical_occupancy_pct, 50),
                lambda f: f"occupancy limited by shared memory ({(f.rec.shared_mem_per_block_bytes or 0) / 1024:.1f} KiB/block): theoretical {_pct(f.rec.theoretical_occupancy_pct)}"),
    LimiterRule("sub-wave-grid",
                lambda f: f.lt(f.rec.waves_per_sm, 1.0),
                lambda f: f"grid fills {100 * (f.rec.waves_per_sm or 0):.1f} % of one wave: some SMs idle the whole kernel"),
    LimiterRule("tail-effect",
                lambda f: f.ge(f.tail_idle_pct, TAIL_IDLE_PCT) and f.ge(f.rec.waves_per_sm, 1.0),
                lambda f: f"tail effect: {f.rec.waves_per_sm:.2f} waves, {f.tail_idle_pct:.0f} % of SM slots idle in the last wave"),
    LimiterRule("divergence",
                lambda f: f.ge(f.rec.branch_divergence_pct, DIVERGENCE_PCT) or f.lt(f.rec.simt_efficiency_pct, SIMT_EFFICIENCY_PCT),
                lambda f: f"branch divergence: {_pct(f.rec.branch_divergence_pct)} of branch targets not warp-uniform, SIMT efficiency {_pct(f.rec.simt_efficiency_pct)}"),
    LimiterRule("dominant-stall",
                lambda f: f.top_stall is not None,
                lambda f: f"dominant stall {f.top_stall} ({_pct(f.top_stall_pct)} of stalled warp-cycles): {STALL_MEANING.get(f.top_stall or '', '')}"),
)

LEVERS: tuple[LeverRule, ...] = (
    LeverRule("recapture-roofline", lambda f: f.bound == "unmeasured",
              "recapture with FLOP and DRAM byte counters: kernelscope capture --set roofline",
              "turns bound 'unmeasured' into compute/memory/latency with %SoL",
              "the new report has sm__ops_path_tensor_src_* and dram__bytes_{read,write}.sum", 3, 1),
    LeverRule("cut-bytes", lambda f: f.bound == "memory",
              "move fewer DRAM bytes: fuse with neighbouring ops, quantise weights/KV (fp8, int4), keep reused data in L2",
              "duration falls in proportion to DRAM bytes while %SoL memory stays high",
              "dram_bytes and duration_ns drop together in a recapture", 3, 2),
    LeverRule("lower-precision",
              lambda f: f.bound == "compute" and f.rec.dominant_precision in {"tensor_bf16", "tensor_fp16", "tensor_tf32"},
              "run the tensor work in fp8 (or fp4 on Blackwell)",
              "up to 2x faster at the same %SoL, since the fp8 peak is twice the bf16 peak",
              "flops move to tensor_fp8 and duration_ns halves", 3, 3),
    LeverRule("use-tensor-cores",
              lambda f: f.gemm_like and (not (f.rec.dominant_precision or "tensor").startswith("tensor")
                                         or (f.rec.flops is None and f.lt(f.rec.tensor_pipe_active_pct, LOW_TENSOR_PIPE_PCT))),
              "route the matmul to tensor cores (a cuBLAS/CUTLASS/wgmma path, bf16/fp8 inputs)",
              "order-of-magnitude more FLOP/s ceiling",
              "tensor_pipe_active_pct rises and tensor_* FLOP appear", 3, 2),
    LeverRule("fix-divergence",
              lambda f: f.ge(f.rec.branch_divergence_pct, DIVERGENCE_PCT) or f.lt(f.rec.simt_efficiency_pct, SIMT_EFFICIENCY_PCT),
              "make branches warp-uniform: bucket or sort work by path, move the branch to block level, predicate short paths",
              "SIMT efficiency toward 100 %, fewer issued instructions for the same work",
              "simt_efficiency_pct near 100 and branch_divergence_pct near 0", 2, 2),
    LeverRule("cut-instructions",
              lambda f: f.bound == "latency" and (f.ge(f.rec.sm_busy_pct, ROOF_REACHED_PCT) or f.ge(f.rec.issue_active_pct, ROOF_REACHED_PCT)),
              "issue-bound (SM pipes busy, neither roof reached): cut instructions per byte/FLOP: fewer passes "
              "over the data, vector loads, cheaper math (fast exp), less index arithmetic",
              "duration falls with issued instructions; %SoL memory rises",
              "sm_busy_pct / issue_active_pct stay high while duration_ns drops", 2, 2),
    LeverRule("more-parallelism", lambda f: f.bound == "latency" and f.lt(f.rec.waves_per_sm, 1.0),
              "launch more CTAs: split-K / stream-K, smaller tiles, or batch more work per launch",
              "SMs that now idle take work; %SoL rises toward the grid's fill factor",
              "waves_per_sm >= 1 and sm_busy_pct up", 2, 2),
    LeverRule("hide-memory-latency",
              lambda f: f.bound == "latency" and f.top_stall == "long_scoreboard" and f.ge(f.top_stall_pct, DOMINANT_STALL_PCT),
              "keep more loads in flight: vectorised 16-byte loads, cp.async/TMA pipelining, more independent work per thread",
              "long_scoreboard share and duration fall; %SoL memory rises",
              "warp_stalls.long_scoreboard drops in a recapture with the stalls add-on", 2, 2),
    LeverRule("raise-occupancy-registers",
              lambda f: f.bound in {"latency", "unmeasured"} and (f.rec.occupancy_limiter or "").startswith("registers") and f.lt(f.rec.theoretical_occupancy_pct, 50),
              "cut registers per thread (__launch_bounds__, -maxrregcount, smaller per-thread tiles) to fit more warps",
              "more warps hide latency, if no spills appear",
              "theoretical_occupancy_pct rises and no local-memory traffic appears", 2, 2),
    LeverRule("raise-occupancy-smem",
              lambda f: f.bound in {"latency", "unmeasured"} and "shared_mem" in (f.rec.occupancy_limiter or "") and f.lt(f.rec.theoretical_occupancy_pct, 50),
              "use less shared memory per block (fewer pipeline stages, smaller tiles) so more blocks fit",
              "more resident blocks hide latency",
              "launch__occupancy_limit_shared_mem rises", 1, 2),
    LeverRule("fix-tail", lambda f: f.ge(f.tail_idle_pct, TAIL_IDLE_PCT) and f.ge(f.rec.waves_per_sm, 1.0),
              "size tiles or the grid so the number of waves is whole (or use a persistent/stream-K schedule)",
              "the idle last-wave slots are recovered",
              "waves_per_sm close to an integer; duration drops by about the idle share", 1, 2),
    LeverRule("balance-barriers",
              lambda f: f.top_stall == "barrier" and f.ge(f.top_stall_pct, DOMINANT_STALL_PCT),
              "balance work between __syncthreads (warp specialisation, fewer block-wide barriers)",
              "barrier share falls", "warp_stalls.barrier drops", 1, 2),
    LeverRule("at-the-roof", lambda f: f.bound == "compute" and f.ge(f.pct_compute, 80),
              "at the compute roof: only less work (algorithmic) or a cheaper precision helps",
              "no gain from tuning this kernel's schedule", "pct_sol_compute stays >= 80", 1, 3),
    LeverRule("recapture-stalls", lambda f: f.bound != "unmeasured" and f.rec.warp_stalls is None,
              "recapture with the stalls add-on to name what warps wait on: kernelscope capture --set roofline --add stalls",
              "names the dominant stall and its lever", "warp_stalls is filled in", 1, 1),
)
