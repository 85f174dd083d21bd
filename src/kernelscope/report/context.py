"""The full-context header: what a reviewer needs to trust a number. Every field is filled from
the bundles' manifests, the bare reports' own records (report_manifest.ReportManifest) and the campaign
config when they know it, and says "unknown" (or "not recorded") otherwise."""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping, Sequence
from pathlib import PurePath
from typing import Any

from .. import redact
from ..manifest import Recorded
from ..ncu.metric_sets import METRICS_SECTION
from ..report_manifest import ReportManifest

UNKNOWN = "unknown"
NOT_RECORDED = "not recorded"
FIELDS = ("model", "hardware", "quantisation", "parallelism", "serving_config", "workload", "capture")


def shown_command(argv: Sequence[str]) -> str:
    """A recorded command as a reader needs it: the program by name, not this machine's path to it
    (`/opt/venv/bin/python3` -> `python3`), secret values masked."""
    if not argv:
        return ""
    return shlex.join([PurePath(argv[0]).name, *redact.argv(list(argv[1:]))])


def _mhz(hz: float | None) -> str:
    return NOT_RECORDED if hz is None else f"{hz / 1e6:,.0f} MHz"


def clock_control(m: Recorded) -> str:
    """As given; a recorded command line without it ran at ncu's default (base); a report that
    records no command line (ncu 2020.3, the GUI) does not say."""
    if m.clock_control:
        return m.clock_control
    if isinstance(m, ReportManifest) and not m.ncu_command:
        return NOT_RECORDED
    return "not given (ncu's default: base)"


def report_line(m: ReportManifest) -> str:
    """A bare report's capture, from what it records: ncu, the set and its sections, the clocks,
    and who wrote it where and when."""
    named = [s for s in m.sections if s != METRICS_SECTION]
    sections = ", ".join(named) or "none"
    if METRICS_SECTION in m.sections:
        sections += " + a --metrics list"
    ncu = m.ncu.version if m.ncu else NOT_RECORDED
    return (f"ncu {ncu}, set {m.metric_set} (sections {sections}), clock-control {clock_control(m)}, "
            f"device max clocks SM {_mhz(m.clocks_hz.get('sm_max_hz'))} / memory "
            f"{_mhz(m.clocks_hz.get('memory_max_hz'))}, profiled {', '.join(m.processes) or NOT_RECORDED} on host "
            f"{m.host or NOT_RECORDED}, written {m.created_at or NOT_RECORDED}")


def summary(m: Recorded) -> str:
    """The capture in a few words, for a table's or figure's header: ncu, set, clocks, what ran."""
    ncu = m.ncu.version if m.ncu else NOT_RECORDED
    clocks = clock_control(m)
    ran = shown_command(m.target) or NOT_RECORDED
    return f"ncu {ncu}, set {m.metric_sets}, clock-control {clocks}, ran {ran}"


def capture_line(m: Recorded) -> str:
    if isinstance(m, ReportManifest):
        return report_line(m)
    s = m.scoping
    sets = m.metric_sets
    ncu = m.ncu.version if m.ncu else UNKNOWN
    where = f" in pod {m.kubernetes.namespace}/{m.kubernetes.deployment} ({m.kubernetes.strategy})" \
        if m.kubernetes else ""
    return (f"ncu {ncu}, set {sets}, kernels {', '.join(s.kernels) or 'all'}, launch-skip {s.launch_skip}, "
            f"launch-count {s.launch_count}, clock-control {s.clock_control}, replay {s.replay_mode}, "
            f"{m.transport}{where}, at {m.started_at}")


def hardware_line(m: Recorded) -> str | None:
    if not m.gpu.name:
        return None
    extra = ", ".join(x for x in (f"driver {m.gpu.driver_version}" if m.gpu.driver_version else "",
                                  f"CUDA {m.gpu.driver_cuda_version}" if m.gpu.driver_cuda_version else "") if x)
    return m.gpu.name + (f" ({extra})" if extra else "")


def header(manifests: Iterable[Recorded], campaign: Mapping[str, Any] | None,
           devices: set[str], extra: Mapping[str, Any]) -> dict[str, str]:
    """Field -> text, in FIELDS order, then what the analysis itself used (ceilings, tool)."""
    found = list(manifests)
    ctx = redact.mapping((campaign or {}).get("context") or {})  # a config's serving_config is a command line too
    for m in found:  # what the capture itself recorded (--context model=...) fills what the campaign left open
        for k, v in m.context.items():
            ctx.setdefault(k, v)
    out: dict[str, str] = {}
    for field in FIELDS:
        value = ctx.get(field)
        out[field] = UNKNOWN if value in (None, "") else str(value)
    if out["hardware"] == UNKNOWN:
        lines = sorted({h for m in found if (h := hardware_line(m))}) or sorted(devices)
        if lines:
            out["hardware"] = "; ".join(lines)
    if out["capture"] == UNKNOWN and found:
        out["capture"] = " | ".join(capture_line(m) for m in found)
    if out["workload"] == UNKNOWN:
        commands = [shown_command(m.target) for m in found if m.target]
        if commands:
            out["workload"] = " | ".join(commands)
    reports = [shown_command(m.ncu_command) for m in found if isinstance(m, ReportManifest) and m.ncu_command]
    if reports:
        out["ncu_command"] = " | ".join(reports)
    out.update({k: str(v) for k, v in extra.items()})
    return out
