"""Metric sets kernelscope asks ncu for: ncu's own `basic`/`full` sections, and our `roofline` list.

`roofline` is the smallest list that still gives every figure the analysis core needs for a
roofline verdict; add-ons are appended on request because each costs replay passes.

Measured on an H200, ncu 2025.3.1, one GEMM (bench/capture_cost.py): `basic` 10 passes, `full` 38;
this roofline list 9. `sm__throughput` (ncu's SOL "Compute (SM) Throughput") alone costs 8 more
passes (it is a breakdown over many sub-metrics), so it is the `sm-throughput` add-on and the
roofline list carries SM active cycles and issue-slot activity instead; the stall reasons cost
about 7 more (`stalls`).
"""

from __future__ import annotations

TENSOR_DTYPES = ("bf16_dst_fp32", "fp16", "tf32_dst_fp32", "fp8_sparsity_off", "int8", "fp64")
SASS_FP_OPS = tuple(f"{p}{op}" for p in "dfh" for op in ("add", "mul", "fma"))

ROOFLINE: tuple[str, ...] = (
    "gpu__time_duration.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    *(f"sm__ops_path_tensor_src_{d}.sum" for d in TENSOR_DTYPES),
    *(f"sm__sass_thread_inst_executed_op_{o}_pred_on.sum" for o in SASS_FP_OPS),
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__cycles_active.avg",
    "sm__cycles_elapsed.avg",
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "smsp__sass_average_branch_targets_threads_uniform.pct",
    "smsp__thread_inst_executed_per_inst_executed.ratio",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__warps_active.avg.per_cycle_active",
    "sm__maximum_warps_per_active_cycle_pct",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps",
    "launch__occupancy_limit_blocks",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
    "launch__waves_per_multiprocessor",
    "launch__grid_size",
    "launch__block_size",
)

STALL_REASONS = (
    "barrier", "branch_resolving", "dispatch_stall", "drain", "gmma", "imc_miss", "lg_throttle",
    "long_scoreboard", "math_pipe_throttle", "membar", "mio_throttle", "misc", "no_instruction",
    "not_selected", "selected", "short_scoreboard", "sleeping", "tex_throttle", "wait",
)
STALLS: tuple[str, ...] = tuple(
    f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio" for r in STALL_REASONS
)
SM_THROUGHPUT: tuple[str, ...] = ("sm__throughput.avg.pct_of_peak_sustained_elapsed",)

ADDONS: dict[str, tuple[str, ...]] = {"stalls": STALLS, "sm-throughput": SM_THROUGHPUT}


def metric_list(addons: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The roofline list plus the named add-ons, in a stable order without repeats."""
    names = list(ROOFLINE)
    for addon in addons:
        names += [m for m in ADDONS[addon] if m not in names]
    return tuple(names)


if __name__ == "__main__":
    import sys

    print(",".join(metric_list(tuple(a for a in sys.argv[1:] if a))))
