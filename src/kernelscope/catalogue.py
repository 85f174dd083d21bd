"""The metric catalogue: every ncu counter kernelscope reads, the figure it feeds, and which capture
set collects it. The capture metric lists (ncu/metric_sets.py) are built from this table and the
readers keep exactly these names, so a counter is named once, collected only if read, and read
only if some set collects it (tests/test_architecture.py checks both directions).

Groups: `roofline` is our default `--metrics` list; `stalls` is the stalls add-on; `sol` comes
with ncu's SpeedOfLight section (the `sol` add-on, or `--set basic/full`); `full` only with ncu's
`--set full`; `launch` is recorded by ncu with every profiled launch (no pass, no request needed);
`blackwell` names exist only on Blackwell chips (ncu 2025.3.1 `--query-metrics --chip gb100`,
docs/hopper-measurements.md §1-2): read when a Blackwell report holds them, never asked for by our Hopper lists
(ncu refuses a metric name the chip lacks).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Group = Literal["roofline", "stalls", "sol", "full", "launch", "blackwell"]
Arch = Literal["hopper", "blackwell"]


@dataclass(frozen=True)
class Counter:
    name: str
    group: Group
    feeds: str  # the figure (or figures) it is read for


_TABLE: list[Counter] = []


def _c(name: str, group: Group, feeds: str) -> str:
    _TABLE.append(Counter(name, group, feeds))
    return name


# -- work: FLOP by precision class --------------------------------------------------------------
# Tensor-core work: precision class -> the counters (summed) holding it on each architecture, already
# in FLOP (an FMA counts as 2). `hopper` is ncu's gh100 naming (also read for older chips); Blackwell
# renames fp16, folds fp8/fp6 (and fp4 operands of the f8f6f4 kind, UTCQMMA) into one name and adds
# the fp4 kind (UTCOMMA: NVFP4/MXFP4). An empty tuple: the class does not exist on that architecture.
_OPS = "sm__ops_path_tensor_src_"
_TENSOR_ROWS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    # class          Hopper (gh100)                 Blackwell (gb100)
    ("tensor_bf16", ("bf16_dst_fp32",), ("bf16_dst_fp32",)),
    ("tensor_fp16", ("fp16",), ("fp16_dst_fp16", "fp16_dst_fp32")),
    ("tensor_tf32", ("tf32_dst_fp32",), ("tf32_dst_fp32",)),
    ("tensor_fp8", ("fp8_sparsity_off",), ("fp4_fp6_fp8_dst_fp16", "fp4_fp6_fp8_dst_fp32")),
    ("tensor_int8", ("int8",), ("int8",)),
    ("tensor_fp64", ("fp64",), ("fp64",)),
    ("tensor_fp4", (), ("fp4_dst_fp32",)),
)
_HOPPER_OPS = {op for _, hopper, _ in _TENSOR_ROWS for op in hopper}
TENSOR_OPS: dict[str, str] = {  # short op name -> counter, each named once
    op: _c(f"{_OPS}{op}.sum", "roofline" if op in _HOPPER_OPS else "blackwell", "flops (tensor)")
    for op in dict.fromkeys(op for _, hopper, blackwell in _TENSOR_ROWS for op in hopper + blackwell)
}
TENSOR_FLOPS: dict[str, dict[Arch, tuple[str, ...]]] = {
    cls: {"hopper": tuple(TENSOR_OPS[o] for o in hopper), "blackwell": tuple(TENSOR_OPS[o] for o in blackwell)}
    for cls, hopper, blackwell in _TENSOR_ROWS
}
# Non-tensor work: thread-level SASS instruction counts times FLOP per instruction.
# fp64/fp32: add and mul count 1, fma 2. fp16 SASS ops are packed half2 (HADD2/HMUL2/HFMA2), so
# ncu's own roofline counts them 2/2/4; we follow ncu there.
SIMT_FLOPS: dict[str, tuple[tuple[str, int], ...]] = {
    "fp64": (("dadd", 1), ("dmul", 1), ("dfma", 2)),
    "fp32": (("fadd", 1), ("fmul", 1), ("ffma", 2)),
    "fp16": (("hadd", 2), ("hmul", 2), ("hfma", 4)),
}
SIMT_OPS = tuple(op for ops in SIMT_FLOPS.values() for op, _ in ops)
SIMT_COUNT = {op: _c(f"sm__sass_thread_inst_executed_op_{op}_pred_on.sum", "roofline", "flops (SIMT)")
              for op in SIMT_OPS}
# `--set full` stores the same counts only as per-elapsed-cycle rates on the SMSPs.
SIMT_RATE = {op: _c(f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum.per_cycle_elapsed", "full",
                    "flops (SIMT, from --set full)") for op in SIMT_OPS}
SMSP_CYCLES = _c("smsp__cycles_elapsed.avg", "full", "flops (SIMT rate x cycles)")
# HFMA2.MMA: the compiler moves registers with HFMA2 on the tensor pipe; ncu's hfma count includes
# them (seen in SASS: every HFMA2 of the softmax and randn fixtures is HFMA2.MMA). Real fp16 math
# runs on the FMA pipe, which this counter measures.
HFMA2_MMA = _c("sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum", "roofline", "flops.fp16 (moves excluded)")
FP16_FMA_PIPE = _c("sm__thread_inst_executed_pipe_fma_type_fp16_pred_on.sum", "roofline",
                   "flops.fp16 (moves excluded)")

# -- time, bytes, clocks -------------------------------------------------------------------------
DURATION = _c("gpu__time_duration.sum", "roofline", "duration_ns")
DRAM_READ = _c("dram__bytes_read.sum", "roofline", "dram_bytes")
DRAM_WRITE = _c("dram__bytes_write.sum", "roofline", "dram_bytes")
# ncu's sections store DRAM % as gpu__dram_throughput; our list asks for dram__throughput.
DRAM_PCT = (_c("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "sol", "dram_throughput_pct"),
            _c("dram__throughput.avg.pct_of_peak_sustained_elapsed", "roofline", "dram_throughput_pct"))
L2_BYTES = _c("lts__t_bytes.sum", "roofline", "l2_bytes")
L2_PCT = _c("lts__throughput.avg.pct_of_peak_sustained_elapsed", "roofline", "l2_throughput_pct")
SM_CLOCK = _c("sm__cycles_elapsed.avg.per_second", "roofline", "sm_clock_hz")
DRAM_CLOCK = _c("dram__cycles_elapsed.avg.per_second", "roofline", "dram_clock_hz")

# -- SM activity and pipes -----------------------------------------------------------------------
SM_BUSY = _c("sm__throughput.avg.pct_of_peak_sustained_elapsed", "sol", "sm_busy_pct")  # not a FLOP rate
MEM_BUSY = _c("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "sol", "memory_busy_pct")
SM_CYCLES_ACTIVE = _c("sm__cycles_active.avg", "roofline", "sm_active_pct")
SM_CYCLES_ELAPSED = _c("sm__cycles_elapsed.avg", "roofline", "sm_active_pct")
ISSUE_ACTIVE = _c("smsp__issue_active.avg.pct_of_peak_sustained_active", "roofline", "issue_active_pct")
TENSOR_PIPE = _c("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", "roofline",
                 "tensor_pipe_active_pct")
# Which tensor instruction path: wgmma (Hopper's warpgroup MMA) or mma.sync (HMMA); ncu counts
# wgmma instructions in both counters, mma.sync only in the hmma one.
TENSOR_WGMMA_INST = _c("sm__inst_executed_pipe_tensor_op_gmma.sum", "roofline", "tensor_path")
TENSOR_HMMA_INST = _c("sm__inst_executed_pipe_tensor_op_hmma.sum", "roofline", "tensor_path")
# Blackwell: tcgen05 (UTC*MMA) runs on the TC pipe, legacy mma.sync on the tensor pipe's hmma subpipe.
TENSOR_TC_INST = _c("sm__inst_executed_pipe_tc.sum", "blackwell", "tensor_path")
TENSOR_SUBPIPE_HMMA_INST = _c("sm__inst_executed_pipe_tensor_subpipe_hmma.sum", "blackwell", "tensor_path")
PIPES: dict[str, str] = {  # pipe -> % of its peak while the SM was active
    pipe: _c(metric, "roofline", f"pipe_busy.{pipe}") for pipe, metric in (
        ("fma", "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"),
        ("alu", "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active"),
        ("fp64", "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active"),
        ("xu", "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active"),
        ("lsu", "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active"),
    )
}

# -- occupancy and launch ------------------------------------------------------------------------
OCC_ACHIEVED = _c("sm__warps_active.avg.pct_of_peak_sustained_active", "roofline", "achieved_occupancy_pct")
OCC_THEORETICAL = _c("sm__maximum_warps_per_active_cycle_pct", "roofline", "theoretical_occupancy_pct")
WARPS_ACTIVE = _c("sm__warps_active.avg.per_cycle_active", "roofline", "achieved_active_warps_per_sm")
REGISTERS = _c("launch__registers_per_thread", "launch", "registers_per_thread")
SMEM_STATIC = _c("launch__shared_mem_per_block_static", "launch", "shared_mem")
SMEM_DYNAMIC = _c("launch__shared_mem_per_block_dynamic", "launch", "shared_mem")
SMEM_DRIVER = _c("launch__shared_mem_per_block_driver", "launch", "shared_mem")  # 1 KiB the driver reserves
WAVES = _c("launch__waves_per_multiprocessor", "launch", "waves_per_sm")
BLOCK_LIMITS: dict[str, str] = {
    limit: _c(f"launch__occupancy_limit_{limit}", "launch", "occupancy_limiter")
    for limit in ("registers", "shared_mem", "warps", "blocks")
}
GRID_DIMS = tuple(_c(f"launch__grid_dim_{a}", "launch", "grid") for a in "xyz")
BLOCK_DIMS = tuple(_c(f"launch__block_dim_{a}", "launch", "block") for a in "xyz")
DEVICE_NAME = _c("device__attribute_display_name", "launch", "device")
COMPUTE_CAPABILITY = _c("device__attribute_compute_capability_major", "launch", "flops (counter names by arch)")
MAX_SM_CLOCK_KHZ = _c("device__attribute_max_gpu_frequency_khz", "launch", "limiter (clock cap)")

# -- divergence ----------------------------------------------------------------------------------
BRANCH_TARGETS = _c("smsp__sass_branch_targets.sum", "roofline", "branch_divergence_pct")
BRANCH_DIVERGENT = _c("smsp__sass_branch_targets_threads_divergent.sum", "roofline", "branch_divergence_pct")
THREADS_PER_INST = _c("smsp__thread_inst_executed_per_inst_executed.ratio", "roofline", "simt_efficiency_pct")

# -- warp stalls ---------------------------------------------------------------------------------
# "selected" is the issuing warp, not a stall: it is neither collected nor shown.
STALL_REASONS: tuple[str, ...] = (
    "barrier", "branch_resolving", "dispatch_stall", "drain", "gmma", "imc_miss", "lg_throttle",
    "long_scoreboard", "math_pipe_throttle", "membar", "mio_throttle", "misc", "no_instruction",
    "not_selected", "short_scoreboard", "sleeping", "tex_throttle", "wait",
)
STALLS = {r: _c(f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio", "stalls", "warp_stalls")
          for r in STALL_REASONS}

COUNTERS: tuple[Counter, ...] = tuple(_TABLE)
WANTED: frozenset[str] = frozenset(c.name for c in COUNTERS)
"""Every counter the analysis reads; readers keep only these."""
NUMERIC: frozenset[str] = WANTED - {DEVICE_NAME}
"""WANTED but the device name, which is text and read on its own."""


def group(name: Group) -> tuple[str, ...]:
    """The counters of one group, in table order."""
    return tuple(c.name for c in COUNTERS if c.group == name)
