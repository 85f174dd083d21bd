"""A capture plan: everything one ncu capture needs, validated for live-serving safety up front,
and the capture units it splits into (one ncu run, one attach session, or one wrapped pod each).

The limits live here, in one policy table, for every place that captures: a local program, an
attach session, a Kubernetes pod with one replica or with several.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Literal

from ..errors import PlanError
from .metric_sets import ADDONS, SETS, AddonName, MetricSet

ClockControl = Literal["none", "base"]
TargetProcesses = Literal["all", "application-only"]
ReplayMode = Literal["kernel", "application"]
GraphProfiling = Literal["node", "graph"]
FilterMode = Literal["global", "per-gpu"]
NameBase = Literal["demangled", "function", "mangled"]  # what ncu matches --kernel-name against
PolicyName = Literal["local", "single-replica", "multi-replica"]


@dataclass(frozen=True)
class Policy:
    """What a capture may do where it runs: launches replayed and metric sets allowed."""

    name: PolicyName
    max_launch_count: int
    sets: tuple[MetricSet, ...]
    forceable: bool  # --force lifts the launch limit (never on a live deployment)


POLICIES: dict[PolicyName, Policy] = {
    "local": Policy("local", 5, SETS, forceable=True),
    "single-replica": Policy("single-replica", 3, ("basic", "roofline"), forceable=False),
    "multi-replica": Policy("multi-replica", 5, SETS, forceable=False),
}


@dataclass(frozen=True)
class Attach:
    host: str
    port: int


@dataclass(frozen=True)
class CaptureUnit:
    """One ncu run: its filter (None: unscoped), how many launches, and the user's kernels it covers."""

    index: int
    kernel_filter: str | None
    launch_count: int
    kernels: tuple[str, ...]
    group: int | None = None  # multiplexed: the counter group this run collects (ncu/multiplex.py), 1-based
    metrics: tuple[str, ...] = ()  # multiplexed: that group's counters, instead of the plan's list

    @property
    def label(self) -> str | None:
        """What its files are named after: the user's kernel, or the combined filter."""
        return self.kernels[0] if len(self.kernels) == 1 else self.kernel_filter


@dataclass(frozen=True)
class CapturePlan:
    kernels: tuple[str, ...]  # "regex:EXPR" or an exact name (ncu's syntax)
    metric_set: MetricSet = "roofline"
    addons: tuple[AddonName, ...] = ()
    launch_skip: int = 0
    launch_count: int = 1
    target: tuple[str, ...] = ()  # the program and its arguments (local run, or a pod's serving command)
    attach: Attach | None = None  # or: a process started with `kernelscope launch`
    env: tuple[tuple[str, str], ...] = ()  # set on ncu itself (and so inherited by the app)
    clock_control: ClockControl = "none"  # measure clocks as they are in serving; ncu's default locks them
    target_processes: TargetProcesses = "all"
    replay_mode: ReplayMode = "kernel"
    graph_profiling: GraphProfiling = "node"
    filter_mode: FilterMode = "global"  # per-gpu: the launch window applies on each GPU (TP ranks)
    profile_from_start: bool = True
    # Filters match the demangled name: a CUTLASS-wrapped kernel's function name is `device_kernel`
    # whatever it wraps (vLLM's FlashAttention-3), so only the demangled name tells FA3 from others.
    name_base: NameBase = "demangled"
    window: str = "start"  # start: launches counted from the process's start; serving: only serving traffic
    one_session: bool = False  # all kernels in one filter (one wrapped pod: one ncu, one model load)
    multiplex: bool = False  # one counter group a run, each on its own launches (ncu/multiplex.py)
    notes: tuple[str, ...] = field(default=())

    def with_notes(self, *notes: str) -> CapturePlan:
        return replace(self, notes=self.notes + notes)

    def units(self) -> tuple[CaptureUnit, ...]:
        """One run per kernel, or one run whose filter covers them all with a count for each; when
        multiplexed, one such run per counter group, each on the next launches of the kernels."""
        if self.multiplex:  # one run a group, its filter covering every kernel with a count for each
            from .multiplex import attach_sessions, groups

            lists = groups(self.addons) if self.attach is None else attach_sessions(groups(self.addons))
            return tuple(CaptureUnit(g, combined_filter(self.kernels, self.name_base),
                                     self.launch_count * len(self.kernels), self.kernels, g, metrics)
                         for g, metrics in enumerate(lists, 1))
        if not self.kernels:
            return (CaptureUnit(1, None, self.launch_count, ()),)
        if self.one_session and len(self.kernels) > 1:
            return (CaptureUnit(1, combined_filter(self.kernels, self.name_base), self.launch_count * len(self.kernels),
                                self.kernels),)
        return tuple(CaptureUnit(i, unit_filter(k, self.name_base), self.launch_count, (k,))
                     for i, k in enumerate(self.kernels, 1))


def parse_attach(text: str) -> Attach:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise PlanError(f"--attach {text!r}: expected HOST:PORT, e.g. 127.0.0.1:49152")
    return Attach(host, int(port))


def check_kernel(pattern: str) -> str:
    """A kernel name or `regex:EXPR`: data for ncu, never an option or a shell word."""
    if not pattern or pattern.startswith("-") or any(ord(c) < 32 for c in pattern):
        raise PlanError(f"--kernel {pattern!r}: a kernel name or regex:EXPR (no leading '-', no control characters)")
    if pattern.startswith("regex:"):
        try:
            re.compile(pattern.removeprefix("regex:"))
        except re.error as exc:
            raise PlanError(f"--kernel {pattern!r}: bad regular expression ({exc})") from exc
    return pattern


def validate(plan: CapturePlan, policy: Policy, allow_unscoped: bool = False, force: bool = False) -> CapturePlan:
    """Refuse what would hurt a serving process or produce an unusable report."""
    for kernel in plan.kernels:
        check_kernel(kernel)
    if plan.multiplex:
        _multiplexable(plan)
    if plan.metric_set not in policy.sets:
        raise PlanError(f"{policy.name} target: --set {plan.metric_set} not allowed (use {' or '.join(policy.sets)})")
    for addon in plan.addons:
        if addon not in ADDONS:
            raise PlanError(f"--add {addon!r}: choose from {', '.join(ADDONS)}")
        if plan.metric_set != "roofline":
            raise PlanError(f"--add {addon} extends the roofline list; --set {plan.metric_set} already has it")
    if not plan.kernels and not (allow_unscoped and policy.forceable):
        raise PlanError("no --kernel given: an unscoped capture replays every kernel (10-100x each); "
                        "name the kernel(s)" + (", or pass --allow-unscoped" if policy.forceable else ""))
    if plan.launch_count < 1 or plan.launch_skip < 0:
        raise PlanError("--launch-count must be >= 1 and --launch-skip >= 0")
    if plan.launch_count > policy.max_launch_count and not (force and policy.forceable):
        raise PlanError(f"{policy.name} target: --launch-count {plan.launch_count} > {policy.max_launch_count}: "
                        "each launch is replayed many times"
                        + ("; pass --force if the process can take it" if policy.forceable else ""))
    return plan


def _multiplexable(plan: CapturePlan) -> None:
    """--multiplex collects our roofline list (and the stall add-on) one group a launch: ncu's sets
    and sections are not groups. (one_session refuses it: one session collects one list.)"""
    from .multiplex import ALLOWED_ADDONS

    if plan.metric_set != "roofline":
        raise PlanError(f"--multiplex collects the roofline list one counter group a launch; --set {plan.metric_set} "
                        "is ncu's own set, collected whole (replayed)")
    if any(a not in ALLOWED_ADDONS for a in plan.addons):
        raise PlanError(f"--multiplex with --add {', '.join(a for a in plan.addons if a not in ALLOWED_ADDONS)}: only "
                        f"{', '.join(ALLOWED_ADDONS)} is counters that split into one-pass groups (sol and nvlink "
                        "are ncu sections)")
    if not plan.kernels:
        raise PlanError("--multiplex needs --kernel: each group is collected on launches of the same kernel")
    if plan.replay_mode != "kernel":
        raise PlanError("--multiplex collects a group a launch under kernel replay: --replay-mode application "
                        "reruns the program per pass")


_REGEX_SPECIAL = re.compile(r"([.^$*+?()\[\]{}|\\])")


def name_regex(name: str) -> str:
    """An exact kernel name as a regex over ncu's demangled names: the name whole, as a function
    (`divergent_fma(float *, int)`), a template (`flash_fwd_kernel<...>`), a namespace member, or the
    kernel inside a wrapper (`device_kernel<flash::FlashAttnFwdSm90<...>>`). Only regex metacharacters
    are escaped (ncu's ECMAScript regex)."""
    escaped = _REGEX_SPECIAL.sub(lambda m: "\\" + m.group(1), name)
    return f"(^|[ :<]){escaped}([<(>,]|$)"


def unit_filter(kernel: str, base: NameBase) -> str:
    """The ncu --kernel-name value for one kernel: a regex as given; an exact name as given for the
    function base, else as the regex that finds it in the demangled or mangled name."""
    if kernel.startswith("regex:") or base == "function":
        return kernel
    return "regex:" + name_regex(kernel)


def combined_filter(kernels: tuple[str, ...], base: NameBase = "demangled") -> str:
    """One ncu filter matching any of several kernels (exact names escaped and anchored)."""
    if len(kernels) == 1:
        return unit_filter(kernels[0], base)
    parts = [k.removeprefix("regex:") if k.startswith("regex:")
             else f"^{re.escape(k)}$" if base == "function" else name_regex(k) for k in kernels]
    return "regex:" + "|".join(f"({p})" for p in parts)


def one_session(plan: CapturePlan, why: str) -> CapturePlan:
    """All kernels through one ncu session: a wrapped sister pod runs one ncu over one model load.
    (Attach needs no such merging: a launched process takes sequential attach sessions, one per
    kernel, measured with ncu 2025.3.1: docs/hopper-measurements.md, "Attach sessions".)"""
    if plan.multiplex:
        raise PlanError(f"{why}: one ncu session for the whole capture, and --multiplex needs one a counter group")
    if len(plan.kernels) < 2:
        return plan
    return replace(plan, one_session=True).with_notes(
        f"{why}: one session for {len(plan.kernels)} kernels ({', '.join(plan.kernels)}) with filter "
        f"{combined_filter(plan.kernels, plan.name_base)} and launch count {plan.launch_count} each")
