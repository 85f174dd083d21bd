"""What inspect and preflight report: one finding per check, with its level and evidence, and the
Inspection they fill in (here, so that preflight, resources and the sister read it without
importing inspect, which runs preflight)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from .. import redact
from ..errors import KubeError
from .vllm_release import ProfilerSwitch, profiler_switch

# three answers, never a guess: ok, a problem (warn, block), or "unchecked" (could not check: the
# reason and the permission that would let it); info: a fact with no judgement
Strategy = Literal["wrap", "attach", "direct"]
Level = Literal["ok", "info", "warn", "block", "unchecked"]
GPU = "nvidia.com/gpu"


@dataclass(frozen=True)
class Finding:
    name: str
    level: Level
    message: str
    evidence: str


def unchecked(name: str, what: str, why: str, permission: str) -> Finding:
    """A check that could not run: never reported as ok (the cluster refused a read, or gave none)."""
    return Finding(name, "unchecked", f"could not check {what}: {why}", f"needs: {permission}")


def as_int(text: Any, default: int = 0) -> int:
    try:
        return int(str(text))
    except (TypeError, ValueError):
        return default


def named(spec: dict[str, Any], name: str) -> dict[str, Any]:
    """The container of a pod spec (a template's or an admitted pod's) by name; {} when it has none."""
    return next((c for c in spec.get("containers") or [] if c.get("name") == name), {})


# NVIDIA's device plugin names a whole GPU nvidia.com/gpu, a time-sliced or MPS-shared one
# nvidia.com/gpu.shared (renameByDefault), and a MIG slice nvidia.com/mig-<g>g.<mem>gb (mixed strategy)
NVIDIA_GPU = re.compile(r"nvidia\.com/(?:gpu(?:\.shared)?|mig-\d+g\.\d+gb(?:\.\w+)?)")


def gpu_resource(container: dict[str, Any]) -> str | None:
    """The NVIDIA GPU resource the container asks for (a whole GPU, a shared one, a MIG slice)."""
    res = container.get("resources") or {}
    for part in ("limits", "requests"):
        for key in res.get(part) or {}:
            if isinstance(key, str) and NVIDIA_GPU.fullmatch(key):
                return key
    return None


def gpu_request(container: dict[str, Any], key: str | None = None) -> int:
    """How many of `key` (default: the NVIDIA GPU resource it asks for) the container asks for."""
    key = key or gpu_resource(container)
    res = container.get("resources") or {}
    for part in ("limits", "requests"):
        value = (res.get(part) or {}).get(key)
        if value is not None:
            return as_int(value)
    return 0


@dataclass
class Inspection:
    namespace: str
    deployment: str
    replicas: int
    template: dict[str, Any]  # the production pod template, as the API returned it
    container: str
    image: str
    command: list[str]  # the container's command (its entrypoint override); [] when the image's runs
    args: list[str]
    node: str | None
    pod: str | None  # a running production pod
    tensor_parallel: int
    server_port: int
    gpus: int
    findings: list[Finding] = field(default_factory=list)
    pin_node: str | None = None  # a ReadWriteOnce model volume keeps the sister on production's node
    app_cuda: str | None = None  # from the production pod's launch log
    strategy: Strategy = "wrap"
    strategy_reason: str = ""
    kind: str = "Deployment"  # what holds the template: Deployment, StatefulSet, LeaderWorkerSet
    served_for: str | None = None  # the KServe service whose Deployment this is
    vllm_version: str | None = None  # the server's vLLM release, when something says it
    vllm_version_source: str = "not read"
    api_key: str | None = None  # where the server's API key comes from, as words (never its value)
    api_key_env: dict[str, Any] | None = None  # that source as an env entry for the sister's tools container

    @property
    def switch(self) -> ProfilerSwitch:
        """What opens this server's serving window, by its vLLM release (vllm_release.profiler_switch)."""
        return profiler_switch(self.vllm_version, self.vllm_version_source)

    def blocked(self) -> list[Finding]:
        return [f for f in self.findings if f.level == "block"]

    def serving_command(self, entrypoint: list[str] | None) -> list[str]:
        """The full command the GPU container runs: its command + args, or --entrypoint + args."""
        head = self.command or (entrypoint or [])
        if not head:
            raise KubeError(f"container {self.container} sets only args ({' '.join(redact.argv(self.args))[:80]}): "
                            "the image's ENTRYPOINT runs them and kubectl cannot see it; pass --entrypoint "
                            "(e.g. --entrypoint 'vllm serve' or 'python3 -m vllm.entrypoints.openai.api_server')")
        return [*head, *self.args]
