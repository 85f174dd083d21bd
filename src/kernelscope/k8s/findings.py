"""What inspect and preflight report: one finding per check, with its level and evidence."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

# three answers, never a guess: ok, a problem (warn, block), or "unchecked" (could not check: the
# reason and the permission that would let it); info: a fact with no judgement
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
