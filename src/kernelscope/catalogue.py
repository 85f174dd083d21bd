"""The metric catalogue: which ncu counters feed which figure, in one table a reviewer can read.

Both the capture side (what to ask ncu for) and the readers (what to pull out of a report) use
these names, so a figure and its counters are defined once.
"""

from __future__ import annotations

# Tensor-core work: one counter per precision class, already in FLOP (an FMA counts as 2).
TENSOR_FLOPS: dict[str, str] = {
    "tensor_bf16": "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
    "tensor_fp16": "sm__ops_path_tensor_src_fp16.sum",
    "tensor_tf32": "sm__ops_path_tensor_src_tf32_dst_fp32.sum",
    "tensor_fp8": "sm__ops_path_tensor_src_fp8_sparsity_off.sum",
    "tensor_int8": "sm__ops_path_tensor_src_int8.sum",
    "tensor_fp64": "sm__ops_path_tensor_src_fp64.sum",
}

# Non-tensor work: thread-level SASS instruction counts times FLOP per instruction.
# fp64/fp32: add and mul count 1, fma 2. fp16 SASS ops are packed half2 (HADD2/HMUL2/HFMA2), so
# ncu's own roofline (derived__..._hfma_pred_on_x4) counts them 2/2/4; we follow ncu there.
SIMT_FLOPS: dict[str, tuple[tuple[str, int], ...]] = {
    "fp64": (("dadd", 1), ("dmul", 1), ("dfma", 2)),
    "fp32": (("fadd", 1), ("fmul", 1), ("ffma", 2)),
    "fp16": (("hadd", 2), ("hmul", 2), ("hfma", 4)),
}


def simt_count(op: str) -> str:
    """Counter of thread-level instructions of one SASS op (as the roofline metric list asks)."""
    return f"sm__sass_thread_inst_executed_op_{op}_pred_on.sum"


def simt_rate(op: str) -> str:
    """The same count as `--set full` stores it: a per-elapsed-cycle rate on the SMSPs."""
    return f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum.per_cycle_elapsed"


SMSP_CYCLES = "smsp__cycles_elapsed.avg"

DURATION = "gpu__time_duration.sum"
DRAM_READ = "dram__bytes_read.sum"
DRAM_WRITE = "dram__bytes_write.sum"
SM_BUSY = "sm__throughput.avg.pct_of_peak_sustained_elapsed"  # ncu SOL "Compute (SM) Throughput"
# ncu's sections store DRAM % as gpu__dram_throughput; a --metrics list may name dram__throughput.
DRAM_PCT = (
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
)
SM_CYCLES_ACTIVE = "sm__cycles_active.avg"
SM_CYCLES_ELAPSED = "sm__cycles_elapsed.avg"
ISSUE_ACTIVE = "smsp__issue_active.avg.pct_of_peak_sustained_active"  # ncu "Issue Slots Busy"
TENSOR_PIPE = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"
OCC_ACHIEVED = "sm__warps_active.avg.pct_of_peak_sustained_active"
OCC_THEORETICAL = "sm__maximum_warps_per_active_cycle_pct"
WARPS_ACTIVE = "sm__warps_active.avg.per_cycle_active"
REGISTERS = "launch__registers_per_thread"
SMEM_STATIC = "launch__shared_mem_per_block_static"
SMEM_DYNAMIC = "launch__shared_mem_per_block_dynamic"
WAVES = "launch__waves_per_multiprocessor"
BLOCK_LIMITS: dict[str, str] = {
    "registers": "launch__occupancy_limit_registers",
    "shared_mem": "launch__occupancy_limit_shared_mem",
    "warps": "launch__occupancy_limit_warps",
    "blocks": "launch__occupancy_limit_blocks",
}
BRANCH_UNIFORM = "smsp__sass_average_branch_targets_threads_uniform.pct"
THREADS_PER_INST = "smsp__thread_inst_executed_per_inst_executed.ratio"

# Warp-stall reasons; "selected" is the issuing warp, not a stall, so it is not among them.
STALL_REASONS: tuple[str, ...] = (
    "barrier", "branch_resolving", "dispatch_stall", "drain", "gmma", "imc_miss", "lg_throttle",
    "long_scoreboard", "math_pipe_throttle", "membar", "mio_throttle", "misc", "no_instruction",
    "not_selected", "short_scoreboard", "sleeping", "tex_throttle", "wait",
)


def stall_metric(reason: str) -> str:
    return f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio"


DEVICE_NAME = "device__attribute_display_name"
GRID_DIMS = ("launch__grid_dim_x", "launch__grid_dim_y", "launch__grid_dim_z")
BLOCK_DIMS = ("launch__block_dim_x", "launch__block_dim_y", "launch__block_dim_z")

SIMT_OPS = tuple(op for ops in SIMT_FLOPS.values() for op, _ in ops)

WANTED: frozenset[str] = frozenset(
    {
        *TENSOR_FLOPS.values(),
        *(simt_count(op) for op in SIMT_OPS),
        *(simt_rate(op) for op in SIMT_OPS),
        SMSP_CYCLES, DURATION, DRAM_READ, DRAM_WRITE, SM_BUSY, *DRAM_PCT, TENSOR_PIPE,
        SM_CYCLES_ACTIVE, SM_CYCLES_ELAPSED, ISSUE_ACTIVE,
        OCC_ACHIEVED, OCC_THEORETICAL, WARPS_ACTIVE, REGISTERS, SMEM_STATIC, SMEM_DYNAMIC, WAVES,
        *BLOCK_LIMITS.values(), BRANCH_UNIFORM, THREADS_PER_INST,
        *(stall_metric(r) for r in STALL_REASONS),
    }
)
"""Every numeric metric the analysis reads; readers keep only these."""
