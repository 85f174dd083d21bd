"""A capture plan: everything one ncu run needs, validated for live-serving safety up front."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from ..errors import KernelscopeError
from ..ncu.metric_sets import ADDONS

SETS = ("roofline", "basic", "full")
MAX_LAUNCH_COUNT = 5  # above this a capture on a serving process needs --force


class PlanError(KernelscopeError):
    """A capture that kernelscope refuses to run as asked (and says why and what to do)."""


@dataclass(frozen=True)
class Attach:
    host: str
    port: int


@dataclass(frozen=True)
class CapturePlan:
    kernels: tuple[str, ...]  # one capture each; "regex:EXPR" or an exact name (ncu's syntax)
    metric_set: str = "roofline"
    addons: tuple[str, ...] = ()
    launch_skip: int = 0
    launch_count: int = 1
    target: tuple[str, ...] = ()  # the program and its arguments (local run)
    attach: Attach | None = None  # or: a process started with `kernelscope launch`
    env: tuple[tuple[str, str], ...] = ()  # set on ncu itself (and so inherited by the app)
    clock_control: str = "none"  # measure clocks as they are in serving; ncu's default locks them
    target_processes: str = "all"
    replay_mode: str = "kernel"
    graph_profiling: str = "node"
    profile_from_start: bool = True
    notes: tuple[str, ...] = field(default=())

    def with_notes(self, *notes: str) -> CapturePlan:
        return replace(self, notes=self.notes + notes)


def parse_attach(text: str) -> Attach:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise PlanError(f"--attach {text!r}: expected HOST:PORT, e.g. 127.0.0.1:49152")
    return Attach(host, int(port))


def validate(plan: CapturePlan, allow_unscoped: bool = False, force: bool = False) -> CapturePlan:
    """Refuse what would hurt a serving process or produce an unusable report."""
    if plan.metric_set not in SETS:
        raise PlanError(f"--set {plan.metric_set!r}: choose one of {', '.join(SETS)}")
    for addon in plan.addons:
        if addon not in ADDONS:
            raise PlanError(f"--add {addon!r}: choose from {', '.join(ADDONS)}")
        if plan.metric_set != "roofline":
            raise PlanError(f"--add {addon} extends the roofline list; --set {plan.metric_set} already has it")
    if not plan.kernels and not allow_unscoped:
        raise PlanError("no --kernel given: an unscoped capture replays every kernel (10-100x each); "
                        "name the kernel(s), or pass --allow-unscoped")
    if plan.launch_count < 1 or plan.launch_skip < 0:
        raise PlanError("--launch-count must be >= 1 and --launch-skip >= 0")
    if plan.launch_count > MAX_LAUNCH_COUNT and not force:
        raise PlanError(f"--launch-count {plan.launch_count} > {MAX_LAUNCH_COUNT}: each launch is replayed "
                        "many times; pass --force if the process can take it")
    if bool(plan.target) == bool(plan.attach):
        raise PlanError("give either a program after -- or --attach HOST:PORT")
    return plan


def combined_filter(kernels: tuple[str, ...]) -> str:
    """One ncu filter matching any of several kernels (exact names escaped and anchored)."""
    if len(kernels) == 1:
        return kernels[0]
    parts = [k.removeprefix("regex:") if k.startswith("regex:") else f"^{re.escape(k)}$" for k in kernels]
    return "regex:" + "|".join(f"({p})" for p in parts)


def merge_for_attach(plan: CapturePlan) -> CapturePlan:
    """ncu 2025.3.1 lets a launched process take one attach session, which stays connected: so an
    attach capture of several kernels is one session whose filter covers them all, with a launch
    count for each (measured on the H200: a second `--mode attach` finds no attachable process)."""
    if plan.attach is None or len(plan.kernels) < 2:
        return plan
    merged = combined_filter(plan.kernels)
    return replace(plan, kernels=(merged,), launch_count=plan.launch_count * len(plan.kernels)).with_notes(
        f"attach: one session for {len(plan.kernels)} kernels ({', '.join(plan.kernels)}) with filter {merged}")
