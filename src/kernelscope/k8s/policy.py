"""The safety policy for live captures, enforced and printed before anything runs."""

from __future__ import annotations

from ..capture.plan import CapturePlan, PlanError

SINGLE_REPLICA = {"max_launch_count": 3, "sets": ("basic", "roofline")}
MULTI_REPLICA = {"max_launch_count": 5, "sets": ("basic", "roofline", "full")}


def check(plan: CapturePlan, replicas: int) -> list[str]:
    """Lines describing the policy applied; raises PlanError for what it refuses."""
    rule = SINGLE_REPLICA if replicas <= 1 else MULTI_REPLICA
    who = "single-replica target" if replicas <= 1 else f"{replicas}-replica target"
    if not plan.kernels:
        raise PlanError("no --kernel or --kernel-set: an unscoped capture of a live deployment is refused")
    if plan.launch_count > rule["max_launch_count"]:
        raise PlanError(f"{who}: --launch-count {plan.launch_count} > {rule['max_launch_count']}")
    if plan.metric_set not in rule["sets"]:
        raise PlanError(f"{who}: --set {plan.metric_set} not allowed (use {' or '.join(rule['sets'])} first)")
    return [f"policy ({who}): launch count <= {rule['max_launch_count']}, sets {', '.join(rule['sets'])}, "
            f"one kernel a capture ({len(plan.kernels)} capture(s), a fresh sister process each), "
            "every wait has a timeout; production is never modified"]
