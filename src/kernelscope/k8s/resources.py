"""What the sister asks of the namespace: production's containers, copied, plus kernelscope's own
(the ncu-install init container and the tools sidecar), each of ours with requests and limits so a
namespace whose ResourceQuota covers cpu/memory (which then rejects a container that sets none)
admits it. Read by the quota and LimitRange checks before anything is installed."""

from __future__ import annotations

import re
from typing import Any

from .findings import GPU, Inspection

# kernelscope's added containers: a copy (cp -a of ncu), `sleep`, tar for `kubectl cp`, and ncu's
# exports of a report (the largest use: ~1 GB resident for a report of a few hundred launches)
ADDED_RESOURCES: dict[str, dict[str, str]] = {"requests": {"cpu": "100m", "memory": "256Mi"},
                                              "limits": {"cpu": "2", "memory": "4Gi"}}
_QUANTITY = re.compile(r"([0-9.]+(?:[eE][-+]?[0-9]+)?)([a-zA-Z]*)")
_SUFFIX = {"": 1.0, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
           "Ki": 2.0 ** 10, "Mi": 2.0 ** 20, "Gi": 2.0 ** 30, "Ti": 2.0 ** 40, "Pi": 2.0 ** 50, "Ei": 2.0 ** 60}
QUOTA_KEYS = {"cpu": ("requests", "cpu"), "memory": ("requests", "memory"), "requests.cpu": ("requests", "cpu"),
              "requests.memory": ("requests", "memory"), "limits.cpu": ("limits", "cpu"),
              "limits.memory": ("limits", "memory"), f"requests.{GPU}": ("requests", GPU),
              f"limits.{GPU}": ("limits", GPU)}


def quantity(text: object) -> float:
    """A Kubernetes quantity ("500m", "16Gi", "2") as a number; one it cannot read counts as 0."""
    m = _QUANTITY.fullmatch(str(text).strip())
    if not m or m.group(2) not in _SUFFIX:
        return 0.0
    try:
        return float(m.group(1)) * _SUFFIX[m.group(2)]
    except ValueError:
        return 0.0


def fmt(value: float) -> str:
    return f"{value:g}"


def _amount(container: dict[str, Any], part: str, res: str) -> float:
    given = (container.get("resources") or {}).get(part) or {}
    if res not in given and part == "requests":  # a request left out defaults to the limit
        given = (container.get("resources") or {}).get("limits") or {}
    return quantity(given.get(res, "0"))


def sister_requests(ins: Inspection) -> dict[str, float]:
    """Each quota key's amount for one sister pod, as the quota admission counts a pod: the larger of
    its app containers' sum and its largest init container."""
    spec = ins.template["spec"]
    ours = {"resources": ADDED_RESOURCES}
    out: dict[str, float] = {"pods": 1.0, "count/pods": 1.0}
    for key, (part, res) in QUOTA_KEYS.items():
        app = sum(_amount(c, part, res) for c in [*(spec.get("containers") or []), ours])
        init = max((_amount(c, part, res) for c in [*(spec.get("initContainers") or []), ours]), default=0.0)
        out[key] = max(app, init)
    return out
