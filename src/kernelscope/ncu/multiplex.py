"""Counter groups that each take as few ncu passes as they can, so a capture collects one group a
launch of the same kernel instead of replaying one launch for the whole list (`capture --multiplex`):
replay is what makes a profiled launch cost 10-100x, saves and restores the GPU's memory before each
pass, and hangs a collective whose peers are not replayed. ingest/multiplexed.py merges the launches.

Measured, not guessed (ncu prints the passes each profiled launch took): bench/device/passes.py cut
the list into these groups on an H200 with ncu 2025.3.1 (its output: bench/data/passes-h200.json),
and tests/fixtures/multiplex's capture recorded each group's passes. 17 of the roofline list's 31
groups take one pass; 14 are a counter that takes more even alone (PASSES_ALONE: SASS instruction
counts are patched in, lts__throughput is a breakdown), so those launches are still replayed, each
for its one counter. On another chip or ncu a group may take more: the bundle records every run's
passes (CaptureRecord.passes) and the merged launch says which were replayed.

Against a held process (--attach) no session may take one pass: measured on the H200 with ncu
2025.3.1 (docs/measurements.md, "Multiplexed capture"), after an attach session whose launches took
one pass the process cannot be profiled again ("Failed to prepare kernel for profiling", "Unknown
Error on device 0" in every later session, for the process's life), while sessions of 3, 4 and 10
passes left it whole, several in a row. So there each session carries one of the counters that take
several passes alone, with the one-pass groups spread over them (attach_sessions): fewer passes a
launch than the whole list, but every launch is replayed.
"""

from __future__ import annotations

from .. import catalogue
from .metric_sets import ROOFLINE, AddonName, metric_list

MEASURED_ON = "NVIDIA H200, ncu 2025.3.1"
ALLOWED_ADDONS: tuple[AddonName, ...] = ("stalls",)  # sol and nvlink are sections: sol alone takes 7 passes
# the whole list's passes on one replayed launch, by add-ons (bench/data/passes-h200.json's timing)
WHOLE_LIST_PASSES: dict[tuple[AddonName, ...], int] = {(): 12, ("stalls",): 18}
# counters that take more than one pass even alone (H200, ncu 2025.3.1: tests/fixtures/multiplex's runs)
PASSES_ALONE: dict[str, int] = {
    "lts__throughput.avg.pct_of_peak_sustained_elapsed": 5,
    "sm__ops_path_tensor_src_fp16.sum": 3,
    "sm__ops_path_tensor_src_int8.sum": 3,
    "sm__sass_thread_inst_executed_op_dadd_pred_on.sum": 3,
    "sm__sass_thread_inst_executed_op_dfma_pred_on.sum": 3,
    "sm__sass_thread_inst_executed_op_dmul_pred_on.sum": 3,
    "sm__sass_thread_inst_executed_op_fadd_pred_on.sum": 3,
    "sm__sass_thread_inst_executed_op_ffma_pred_on.sum": 3,
    "sm__sass_thread_inst_executed_op_fmul_pred_on.sum": 3,
    "sm__sass_thread_inst_executed_op_hadd_pred_on.sum": 3,
    "sm__sass_thread_inst_executed_op_hfma_pred_on.sum": 3,
    "sm__sass_thread_inst_executed_op_hmul_pred_on.sum": 3,
    "smsp__sass_branch_targets.sum": 3,
    "smsp__sass_branch_targets_threads_divergent.sum": 3,
}
# every group leads with the launch's duration, so each launch's time is known beside its counters
GROUPS: tuple[tuple[str, ...], ...] = (
    ("gpu__time_duration.sum",
     "dram__bytes_read.sum",
     "dram__bytes_write.sum",
     "dram__cycles_elapsed.avg.per_second",
     "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
    ("gpu__time_duration.sum", "lts__d_sectors.avg.pct_of_peak_sustained_elapsed", "lts__t_bytes.sum"),
    ("gpu__time_duration.sum", "lts__t_sectors.avg.pct_of_peak_sustained_elapsed"),
    ("gpu__time_duration.sum", "lts__throughput.avg.pct_of_peak_sustained_elapsed"),
    ("gpu__time_duration.sum",
     "sm__cycles_active.avg",
     "sm__cycles_elapsed.avg",
     "sm__cycles_elapsed.avg.per_second",
     "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",
     "sm__inst_executed_pipe_tensor_op_gmma.sum",
     "sm__inst_executed_pipe_tensor_op_hmma.sum"),
    ("gpu__time_duration.sum",
     "sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum",
     "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active",
     "sm__maximum_warps_per_active_cycle_pct"),
    ("gpu__time_duration.sum", "sm__ops_path_tensor_src_bf16_dst_fp32.sum"),
    ("gpu__time_duration.sum", "sm__ops_path_tensor_src_fp16.sum"),
    ("gpu__time_duration.sum", "sm__ops_path_tensor_src_fp64.sum"),
    ("gpu__time_duration.sum", "sm__ops_path_tensor_src_fp8_sparsity_off.sum"),
    ("gpu__time_duration.sum", "sm__ops_path_tensor_src_int8.sum"),
    ("gpu__time_duration.sum", "sm__ops_path_tensor_src_tf32_dst_fp32.sum"),
    ("gpu__time_duration.sum", "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active"),
    ("gpu__time_duration.sum", "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"),
    ("gpu__time_duration.sum", "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active"),
    ("gpu__time_duration.sum", "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"),
    ("gpu__time_duration.sum", "sm__sass_thread_inst_executed_op_dadd_pred_on.sum"),
    ("gpu__time_duration.sum", "sm__sass_thread_inst_executed_op_dfma_pred_on.sum"),
    ("gpu__time_duration.sum", "sm__sass_thread_inst_executed_op_dmul_pred_on.sum"),
    ("gpu__time_duration.sum", "sm__sass_thread_inst_executed_op_fadd_pred_on.sum"),
    ("gpu__time_duration.sum", "sm__sass_thread_inst_executed_op_ffma_pred_on.sum"),
    ("gpu__time_duration.sum", "sm__sass_thread_inst_executed_op_fmul_pred_on.sum"),
    ("gpu__time_duration.sum", "sm__sass_thread_inst_executed_op_hadd_pred_on.sum"),
    ("gpu__time_duration.sum", "sm__sass_thread_inst_executed_op_hfma_pred_on.sum"),
    ("gpu__time_duration.sum", "sm__sass_thread_inst_executed_op_hmul_pred_on.sum"),
    ("gpu__time_duration.sum",
     "sm__thread_inst_executed_pipe_fma_type_fp16_pred_on.sum",
     "sm__warps_active.avg.pct_of_peak_sustained_active"),
    ("gpu__time_duration.sum", "sm__warps_active.avg.per_cycle_active"),
    ("gpu__time_duration.sum",
     "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
     "smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio",
     "smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio"),
    ("gpu__time_duration.sum", "smsp__average_warps_issue_stalled_drain_per_issue_active.ratio"),
    ("gpu__time_duration.sum",
     "smsp__average_warps_issue_stalled_gmma_per_issue_active.ratio",
     "smsp__average_warps_issue_stalled_imc_miss_per_issue_active.ratio"),
    ("gpu__time_duration.sum", "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio"),
    ("gpu__time_duration.sum",
     "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
     "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio"),
    ("gpu__time_duration.sum",
     "smsp__average_warps_issue_stalled_membar_per_issue_active.ratio",
     "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio",
     "smsp__average_warps_issue_stalled_misc_per_issue_active.ratio"),
    ("gpu__time_duration.sum", "smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio"),
    ("gpu__time_duration.sum",
     "smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio",
     "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio"),
    ("gpu__time_duration.sum", "smsp__average_warps_issue_stalled_sleeping_per_issue_active.ratio"),
    ("gpu__time_duration.sum",
     "smsp__average_warps_issue_stalled_tex_throttle_per_issue_active.ratio",
     "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio"),
    ("gpu__time_duration.sum", "smsp__issue_active.avg.pct_of_peak_sustained_active"),
    ("gpu__time_duration.sum", "smsp__sass_branch_targets.sum"),
    ("gpu__time_duration.sum", "smsp__sass_branch_targets_threads_divergent.sum"),
    ("gpu__time_duration.sum", "smsp__thread_inst_executed_per_inst_executed.ratio"),
)


def groups(addons: tuple[AddonName, ...] = ()) -> tuple[tuple[str, ...], ...]:
    """The measured groups, cut to the roofline list and `addons`; a counter of the list that no
    measured group holds gets a group of its own (its passes unmeasured: the capture records them)."""
    wanted = metric_list(addons)
    out = [g for g in (tuple(m for m in group if m in wanted) for group in GROUPS) if len(g) > 1]
    held = {m for g in out for m in g}
    out += [(catalogue.DURATION, m) for m in wanted if m not in held and m != catalogue.DURATION]
    return tuple(out)


def _alone_replayed(group: tuple[str, ...]) -> bool:
    """A group of one counter that takes more than one pass even alone (PASSES_ALONE)."""
    return len(group) == 2 and group[1] in PASSES_ALONE


def attach_sessions(groups: tuple[tuple[str, ...], ...]) -> tuple[tuple[str, ...], ...]:
    """The groups as sessions against one held process: each a counter that takes several passes
    alone (PASSES_ALONE), the other groups dealt over them in turn; the whole list in one session
    when none does (a list of one-pass counters only: nothing to carry them)."""
    carriers = [list(g) for g in groups if _alone_replayed(g)]
    if not carriers:
        return (tuple(dict.fromkeys(m for g in groups for m in g)),)
    riders = [g for g in groups if not _alone_replayed(g)]
    for i, group in enumerate(riders):
        carriers[i % len(carriers)] += group[1:]
    return tuple(tuple(c) for c in carriers)


def needs_replay(metrics: tuple[str, ...]) -> bool:
    """A run of these counters replays its launches: one of them takes several passes even alone."""
    return any(m in PASSES_ALONE for m in metrics)


def replayed(groups: tuple[tuple[str, ...], ...]) -> list[int]:
    """The passes of each group that is a counter taking more than one even alone (PASSES_ALONE)."""
    return [PASSES_ALONE[g[1]] for g in groups if _alone_replayed(g)]


def unmeasured(groups: tuple[tuple[str, ...], ...]) -> int:
    """Groups of one counter whose passes alone were never measured: the fixture's capture measured
    the roofline list's; the stall add-on's lone counters only failed to pair."""
    return sum(1 for g in groups if len(g) == 2 and g[1] not in PASSES_ALONE and g[1] not in ROOFLINE)
