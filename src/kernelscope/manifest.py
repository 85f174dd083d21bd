"""The bundle manifest: one frozen, typed record of a capture's full context, written by every
capture (local program, attach, Kubernetes pod) and read by every reader. (A bare report's own
context, and the facts both share, are report_manifest.py's.)

A reviewer trusts a figure only with its context: which ncu and driver on which GPU, which metric
set, how the kernels were scoped, what ran (secrets redacted), and for a harness op the analytic
work. Reading checks every field's type, so a hand-edited or hostile manifest is one clear error,
never a crash or a silent "?".
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from . import redact, typed
from .errors import InputError
from .files import load_json, open_input
from .report_manifest import Analytic, GpuFacts, NcuFacts, ReportManifest

SCHEMA_VERSION = 2
KIND = "kernelscope-bundle"
FILE = "manifest.json"
PROFILES = "ncu-profiles"

Transport = Literal["local", "attach", "pod"]
MetricSet = Literal["roofline", "basic", "full"]


@dataclass(frozen=True)
class Scoping:
    """How the kernels were chosen: ncu's filter and launch window, and the replay settings."""

    kernels: tuple[str, ...]
    launch_skip: int
    launch_count: int
    replay_mode: str
    graph_profiling: str
    target_processes: str
    clock_control: str
    filter_mode: str = "global"
    name_base: str = "function"  # what ncu matched the filters against (captures before this field: function)
    # where the captured launches come from: start (counted from the process's start: start-up's launches too),
    # serving (vLLM's POST /start_profile opened the window after warm-up), profiler-range (the program's own
    # cudaProfilerStart/Stop); None: not recorded (an older bundle)
    window: str | None = None
    multiplex: bool = False  # capture --multiplex: one counter group a run, merged across launches on read


@dataclass(frozen=True)
class CaptureRecord:
    """One ncu run (or one attach session, or one wrapped sister pod) and what it produced."""

    kernel_filter: str | None
    kernels: tuple[str, ...]  # the user's kernels this run covers (several when one filter covers them)
    report: str | None  # bundle-relative path; None when the run produced nothing
    exports: Mapping[str, str] = field(default_factory=dict)  # page -> bundle-relative CSV
    ncu_argv: tuple[str, ...] = ()  # secrets redacted
    exit_code: int | None = None
    passes: tuple[int, ...] = ()
    profiled: tuple[str, ...] = ()
    wall_s: float | None = None
    error: str | None = None  # why this run failed (the bundle keeps the runs that worked)
    causes: tuple[str, ...] = ()  # diagnosis codes, e.g. filter-matched-nothing
    window: str | None = None  # where this run's launches come from (Scoping.window), every launch of its report
    group: int | None = None  # capture --multiplex: the counter group this run collected (ncu/multiplex.py)


@dataclass(frozen=True)
class CommandRun:
    argv: tuple[str, ...]  # secrets redacted
    mutates: bool
    exit_code: int | None
    seconds: float | None


@dataclass(frozen=True)
class KubeContext:
    namespace: str
    deployment: str
    replicas: int
    container: str
    image: str
    node: str | None
    production_pod: str | None
    strategy: str
    release: str | None
    tools_image: str
    capture_id: str
    tensor_parallel: int = 1


@dataclass(frozen=True)
class BundleManifest:
    tool: str
    command: tuple[str, ...]  # the kernelscope command line, secrets redacted
    target: tuple[str, ...]  # the profiled program (or the pod's serving command), secrets redacted
    transport: Transport
    ncu: NcuFacts | None
    gpu: GpuFacts
    metric_set: MetricSet
    addons: tuple[str, ...]
    scoping: Scoping
    env_keys_set: tuple[str, ...]  # names only, never values
    started_at: str
    finished_at: str
    captures: tuple[CaptureRecord, ...]
    reports: tuple[str, ...] = ()
    artifacts_sha256: Mapping[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    analytic: Analytic | None = None
    kubernetes: KubeContext | None = None
    commands_run: tuple[CommandRun, ...] = ()
    context: Mapping[str, str] = field(default_factory=dict)  # user-given: model, serving config, ...
    schema_version: int = SCHEMA_VERSION
    kind: str = KIND

    @property
    def failed(self) -> tuple[CaptureRecord, ...]:
        return tuple(c for c in self.captures if c.error is not None)

    @property
    def metric_sets(self) -> str:
        """The set and its add-ons as one name: `roofline+stalls`."""
        return "+".join([self.metric_set, *self.addons])

    @property
    def clock_control(self) -> str:
        """--clock-control as the capture ran it (a bare report's is its recorded flag)."""
        return self.scoping.clock_control

    @property
    def graph_profiling(self) -> str | None:
        return self.scoping.graph_profiling

    @property
    def multiplexed(self) -> bool:
        return self.scoping.multiplex

    @property
    def shapes(self) -> str | None:
        """What the capture ran: the harness's analytic description, else the program's command."""
        return (self.analytic.describe if self.analytic else None) or " ".join(self.target) or None

    def to_json(self) -> str:
        return json.dumps(typed.plain(self), indent=1, allow_nan=False) + "\n"


Recorded = BundleManifest | ReportManifest  # a capture's context: a bundle's manifest, or a bare report's own


def redacted(m: BundleManifest, secrets: Sequence[str] = ()) -> BundleManifest:
    """The manifest as it may be written or shown: every command line through redact.argv, the
    `--context` through redact.mapping, free text (errors, notes) scrubbed of the secret values
    known (and of those its command lines hold). A capture writes it so, and every reader gets it
    so again (a bundle written by an older kernelscope, or by hand, is shown with none)."""
    known = (*secrets, *redact.secret_values([*m.command, *m.target]))

    def argv(args: Sequence[str]) -> tuple[str, ...]:
        return tuple(redact.argv(list(args)))

    def text(value: str | None) -> str | None:
        return None if value is None else redact.text(value, known)

    return replace(m, command=argv(m.command), target=argv(m.target), context=redact.mapping(m.context),
                   env_keys_set=tuple(k.partition("=")[0] for k in m.env_keys_set),  # a NAME=value written by hand
                   captures=tuple(replace(c, ncu_argv=argv(c.ncu_argv), error=text(c.error)) for c in m.captures),
                   commands_run=tuple(replace(r, argv=argv(r.argv)) for r in m.commands_run),
                   notes=tuple(redact.text(n, known) for n in m.notes))


def parse(doc: Any, path: Path | str) -> BundleManifest:
    if not isinstance(doc, dict) or doc.get("kind") != KIND:
        raise InputError(path, "not a kernelscope bundle manifest")
    if doc.get("schema_version") != SCHEMA_VERSION:
        raise InputError(path, f"bundle manifest schema_version {doc.get('schema_version')!r}; this kernelscope "
                               f"reads {SCHEMA_VERSION} (recapture, or use the kernelscope that wrote it)")
    try:
        return redacted(typed.build(BundleManifest, doc))
    except typed.TypeProblem as exc:
        raise InputError(path, f"bad bundle manifest: {exc}") from exc


def read(path: Path) -> BundleManifest:
    return parse(load_json(path, "bundle manifest", 16 << 20), path)


def sha256_file(path: Path) -> str:
    """Its sha256, read through the one bounded open of a user's file."""
    import hashlib  # here: only bundles need it, and loading OpenSSL costs every analyze start-up ~3 ms

    h = hashlib.sha256()
    with open_input(path, what="report") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
