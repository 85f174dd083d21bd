"""The full-context header: what a reviewer needs to trust a number. Every field is filled from
the bundles' manifests and the campaign config when they know it, and says "unknown" otherwise."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

UNKNOWN = "unknown"
FIELDS = ("model", "hardware", "quantisation", "parallelism", "serving_config", "workload", "capture")


def _capture_line(m: Mapping[str, Any]) -> str:
    scoping = m.get("scoping") or {}
    ncu = (m.get("ncu") or {}).get("version", "?")
    addons = "+".join(m.get("addons") or [])
    return (f"ncu {ncu}, set {m.get('metric_set', '?')}{'+' + addons if addons else ''}, kernels "
            f"{', '.join(scoping.get('kernels') or ['all'])}, launch-skip {scoping.get('launch_skip', '?')}, "
            f"launch-count {scoping.get('launch_count', '?')}, clock-control {scoping.get('clock_control', '?')}, "
            f"replay {scoping.get('replay_mode', '?')}, at {m.get('started_at', '?')}")


def header(manifests: Mapping[str, Mapping[str, Any]], campaign: Mapping[str, Any] | None,
           devices: set[str], extra: Mapping[str, Any]) -> dict[str, str]:
    """Field -> text, in FIELDS order, then what the analysis itself used (ceilings, tool)."""
    ctx = dict((campaign or {}).get("context") or {})
    out: dict[str, str] = {}
    for field in FIELDS:
        value = ctx.get(field)
        out[field] = UNKNOWN if value in (None, "") else str(value)
    if out["hardware"] == UNKNOWN and devices:
        drivers = {m.get("driver_version") for m in manifests.values() if m.get("driver_version")}
        out["hardware"] = ", ".join(sorted(devices)) + (f" (driver {', '.join(sorted(drivers))})" if drivers else "")
    if out["capture"] == UNKNOWN and manifests:
        out["capture"] = " | ".join(_capture_line(m) for m in manifests.values())
    if out["workload"] == UNKNOWN:
        commands = [" ".join(m.get("command") or []) for m in manifests.values() if m.get("command")]
        if commands:
            out["workload"] = " | ".join(commands)
    out.update({k: str(v) for k, v in extra.items()})
    return out
