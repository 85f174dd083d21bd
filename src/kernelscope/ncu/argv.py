"""CapturePlan -> ncu argv. Pure: no I/O, no shell; kernel names and regexes are data, always the
value of their option (plan.check_kernel refuses a leading '-', so ncu never reads one as an option)."""

from __future__ import annotations

from collections.abc import Sequence

from .metric_sets import metric_list, sections
from .plan import CapturePlan, CaptureUnit

LIST_ONLY_FILTER = "kernelscope-list-only-matches-nothing"


def metric_args(plan: CapturePlan, unit: CaptureUnit | None = None) -> list[str]:
    """What ncu collects: ncu's set, or our list and its sections; a multiplexed unit's one group
    and the sections (which add no pass)."""
    if plan.metric_set != "roofline":
        return ["--set", plan.metric_set]
    args = ["--metrics", ",".join(unit.metrics if unit is not None and unit.metrics else metric_list(plan.addons))]
    for section in sections(plan.addons):
        args += ["--section", section]
    return args


def capture_argv(plan: CapturePlan, unit: CaptureUnit, report: str, ncu: str = "ncu") -> list[str]:
    """One scoped capture into `report` (.ncu-rep path), followed by the program (or the attach)."""
    argv = [ncu, "--clock-control", plan.clock_control]
    if plan.attach is None:  # ncu 2025.3.1: "Invalid option --target-processes specified for --mode attach"
        argv += ["--target-processes", plan.target_processes]
    argv += ["--replay-mode", plan.replay_mode, "--graph-profiling", plan.graph_profiling,
             "-f", "-o", report.removesuffix(".ncu-rep"), *metric_args(plan, unit)]
    if plan.filter_mode != "global":
        argv += ["--filter-mode", plan.filter_mode]
    if not plan.profile_from_start:
        argv += ["--profile-from-start", "off"]
    if unit.kernel_filter is not None:
        argv += ["--kernel-name-base", plan.name_base, "--kernel-name", unit.kernel_filter]  # checked: no leading "-"
    argv += ["--launch-skip", str(plan.launch_skip), "--launch-count", str(unit.launch_count)]
    if plan.attach is not None:
        return argv + ["--mode", "attach", "--hostname", plan.attach.host, "--port", str(plan.attach.port)]
    return argv + list(plan.target)


def listing_argv(plan: CapturePlan, ncu: str = "ncu") -> list[str]:
    """A cheap pass that profiles nothing: ncu then prints the names of the kernels that ran."""
    return [ncu, "--clock-control", plan.clock_control, "--target-processes", plan.target_processes,
            "--kernel-name", LIST_ONLY_FILTER, *plan.target]


def launch_argv(target: Sequence[str], port: int | None = None, ncu: str = "ncu") -> list[str]:
    """Start `target` suspended for a later `--mode attach` (ports 49152-49215 by default)."""
    argv = [ncu, "--mode", "launch", "--target-processes", "all", "--forward-signals"]
    if port is not None:
        argv += ["--port", str(port)]
    return [*argv, *target]


def import_argv(report: str, page: str, ncu: str = "ncu", section: str | None = None) -> list[str]:
    argv = [ncu, "--import", report, "--csv", "--page", page]
    return argv + (["--section", section] if section else [])
