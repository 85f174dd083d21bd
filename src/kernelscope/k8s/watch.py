"""Read a pod's state and say, within seconds, when it cannot become what the capture needs:
image pull errors, crash loops, a failed init container, no node to run on (with the scheduler's
message), OOM kills, an expired deadline, or ncu's own error in the GPU container's log."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

WAITING_FATAL = ("ImagePullBackOff", "ErrImagePull", "InvalidImageName", "CrashLoopBackOff",
                 "CreateContainerConfigError", "CreateContainerError", "RunContainerError")


@dataclass(frozen=True)
class PodState:
    phase: str
    running: bool  # the GPU container runs
    ready: bool
    failure: str | None  # why it will not get there, when it will not
    culprit: str | None = None  # the container whose log says more


def _containers(status: dict[str, Any], key: str) -> list[dict[str, Any]]:
    return list(status.get(key) or [])


def state(pod: dict[str, Any], container: str) -> PodState:
    status = pod.get("status") or {}
    phase = status.get("phase", "Unknown")
    if status.get("reason") == "DeadlineExceeded":
        return PodState(phase, False, False, "the sister reached its expiry (activeDeadlineSeconds) and was stopped")
    for cond in status.get("conditions") or []:
        unschedulable = cond.get("reason") == "Unschedulable" and cond.get("status") == "False"
        if cond.get("type") == "PodScheduled" and unschedulable:
            return PodState(phase, False, False, f"Unschedulable: {cond.get('message', 'no node fits')}")
    for c in _containers(status, "initContainerStatuses"):
        term = (c.get("state") or {}).get("terminated") or (c.get("lastState") or {}).get("terminated")
        waiting = (c.get("state") or {}).get("waiting") or {}
        if term and term.get("exitCode", 0) != 0:
            return PodState(phase, False, False, f"Init:Error: init container {c.get('name')} exited "
                            f"{term.get('exitCode')} ({term.get('reason', 'Error')})", c.get("name"))
        if waiting.get("reason") in WAITING_FATAL:
            return PodState(phase, False, False, f"init container {c.get('name')}: {waiting['reason']}: "
                            f"{waiting.get('message', '')}".rstrip(": "), c.get("name"))
    running = ready = False
    for c in _containers(status, "containerStatuses"):
        st = c.get("state") or {}
        waiting, term = st.get("waiting") or {}, st.get("terminated") or {}
        last = (c.get("lastState") or {}).get("terminated") or {}
        if "OOMKilled" in (term.get("reason"), last.get("reason")):
            return PodState(phase, False, False, f"OOMKilled: container {c.get('name')} ran out of memory",
                            c.get("name"))
        if waiting.get("reason") in WAITING_FATAL:
            return PodState(phase, False, False, f"{waiting['reason']}: container {c.get('name')}: "
                            f"{waiting.get('message', '')}".rstrip(": "), c.get("name"))
        if c.get("name") == container:
            if term:
                return PodState(phase, False, False, f"container {container} exited {term.get('exitCode')} "
                                f"({term.get('reason', 'Error')})", container)
            running, ready = "running" in st, bool(c.get("ready"))
    if phase in ("Failed", "Succeeded"):
        return PodState(phase, False, False, f"the sister pod is {phase}")
    return PodState(phase, running, ready, None)


def waiting_on(pod: dict[str, Any], container: str) -> str | None:
    """The phase a pod that is not yet Ready is in, for a timeout's message (None once it is Ready):
    scheduling, init containers, image pull or container start, readiness."""
    status = pod.get("status") or {}
    if not pod:
        return "scheduling: the pod was not found"
    scheduled = next((c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), None)
    if not (pod.get("spec") or {}).get("nodeName") or (scheduled and scheduled.get("status") != "True"):
        why = (scheduled or {}).get("message") or "no node yet"
        return f"scheduling: the pod is not on a node ({why})"
    sidecars = {c.get("name") for c in (pod.get("spec") or {}).get("initContainers") or []
                if c.get("restartPolicy") == "Always"}  # init containers that run beside the others
    for c in _containers(status, "initContainerStatuses"):
        st = c.get("state") or {}
        if not ((st.get("terminated") or {}).get("exitCode") == 0 or "running" in st and c.get("name") in sidecars):
            how = (st.get("waiting") or {}).get("reason") or ("running" if "running" in st else "not started")
            return f"init containers: {c.get('name')} is {how}"
    for c in _containers(status, "containerStatuses"):
        if c.get("name") != container:
            continue
        waiting = (c.get("state") or {}).get("waiting")
        if waiting is not None:
            reason = waiting.get("reason") or "waiting"
            step = "image pull" if "Image" in reason else \
                "image pull or container creation" if reason == "ContainerCreating" else "container start"
            return f"{step}: container {container} is {reason}" + (f" ({waiting['message']})"
                                                                   if waiting.get("message") else "")
        if not c.get("ready"):
            return f"readiness: container {container} runs but is not Ready (its readinessProbe has not passed)"
        return None
    return f"container start: container {container} has no status yet ({status.get('phase', 'Pending')})"


def ncu_errors(log: str) -> list[str]:
    """ncu's own error lines in the GPU container's log (it prints them with ==ERROR==)."""
    return [line for line in log.splitlines() if line.startswith("==ERROR==")]


def ncu_phase(log: str) -> str:
    """How far ncu got, from its own lines: attached to the server's processes, then kernels matched."""
    connected = sum(line.startswith("==PROF== Connected to process") for line in log.splitlines())
    if not connected:
        return "ncu attached: no '==PROF== Connected to process' line, ncu never reached the server's CUDA processes"
    return (f"kernels matched: ncu connected to {connected} process(es) but no launch it profiled matched the "
            "filter within the window and the timeout (a longer --timeout, more requests, or a broader --kernel)")
