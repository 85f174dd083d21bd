"""CapturePlan -> ncu argv. Pure: no I/O, no shell; kernel names and regexes are data."""

from __future__ import annotations

from ..capture.plan import CapturePlan
from .metric_sets import metric_list


def metric_args(plan: CapturePlan) -> list[str]:
    if plan.metric_set == "roofline":
        return ["--metrics", ",".join(metric_list(plan.addons))]
    return ["--set", plan.metric_set]


def capture_argv(plan: CapturePlan, kernel: str | None, report: str, ncu: str = "ncu") -> list[str]:
    """One scoped capture of `kernel` (None: unscoped) into `report` (.ncu-rep path)."""
    argv = [ncu, "--clock-control", plan.clock_control]
    if plan.attach is None:  # ncu 2025.3.1: "Invalid option --target-processes specified for --mode attach"
        argv += ["--target-processes", plan.target_processes]
    argv += ["--replay-mode", plan.replay_mode, "--graph-profiling", plan.graph_profiling,
             "-f", "-o", report.removesuffix(".ncu-rep"), *metric_args(plan)]
    if not plan.profile_from_start:
        argv += ["--profile-from-start", "off"]
    if kernel is not None:
        argv += ["--kernel-name-base", "function", "--kernel-name", kernel]
    argv += ["--launch-skip", str(plan.launch_skip), "--launch-count", str(plan.launch_count)]
    if plan.attach is not None:
        return argv + ["--mode", "attach", "--hostname", plan.attach.host, "--port", str(plan.attach.port)]
    return argv + list(plan.target)


def listing_argv(plan: CapturePlan, ncu: str = "ncu") -> list[str]:
    """A cheap pass that profiles nothing: ncu then prints the names of the kernels that ran."""
    return [ncu, "--clock-control", plan.clock_control, "--target-processes", plan.target_processes,
            "--kernel-name", "kernelscope-list-only-matches-nothing", *plan.target]


def launch_argv(target: list[str], port: int | None = None, ncu: str = "ncu") -> list[str]:
    """Start `target` suspended for a later `--mode attach` (ports 49152-49215 by default)."""
    argv = [ncu, "--mode", "launch", "--target-processes", "all", "--forward-signals"]
    if port is not None:
        argv += ["--port", str(port)]
    return argv + target


def import_argv(report: str, page: str, ncu: str = "ncu", section: str | None = None) -> list[str]:
    argv = [ncu, "--import", report, "--csv", "--page", page]
    return argv + (["--section", section] if section else [])
