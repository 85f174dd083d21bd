"""The bundle manifest: one frozen, typed record of a capture's full context, written by every
capture (local program, attach, Kubernetes pod) and read by every reader.

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
class GpuFacts:
    """From nvidia-smi where the capture ran (the pod's node for a Kubernetes capture)."""

    name: str | None = None
    driver_version: str | None = None
    driver_cuda_version: str | None = None


@dataclass(frozen=True)
class NcuFacts:
    path: str
    version: str


@dataclass(frozen=True)
class Analytic:
    """A harness op's analytic work: FLOP and the fewest DRAM bytes (inputs once, output once)."""

    op: str
    describe: str
    flops: float | None = None
    bytes: float | None = None
    warmup: int | None = None
    iters: int | None = None


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


REPORT_KIND = "ncu-report"


@dataclass(frozen=True)
class ReportManifest:
    """A bare `.ncu-rep`'s context, as the report itself records it (ingest.report_manifest reads
    it): the same facts a bundle's manifest gives its reports, where the report keeps them, and
    None or empty where it does not (a report records no driver version, model or --context)."""

    report: str  # the report, as the input named it
    ncu: NcuFacts | None  # the ncu binary as its command line ran it, and its version
    gpu: GpuFacts
    metric_set: str  # named from the sections and metrics it holds (ncu/metric_sets.recognise)
    sections: tuple[str, ...]  # ncu's sections in its launches (section0: a --metrics list)
    ncu_command: tuple[str, ...]  # ncu and its options, secrets redacted
    target: tuple[str, ...]  # the profiled program and its arguments, secrets redacted
    processes: tuple[str, ...]  # "pid 838 /tmp/sets/copy", one a profiled process
    host: str | None
    clock_control: str | None  # --clock-control as given; None: not given (ncu's default, base)
    clocks_hz: Mapping[str, float] = field(default_factory=dict)  # the device's maximum clocks (sm_max_hz, ...)
    created_at: str | None = None  # when ncu wrote it, ISO 8601 UTC
    kind: str = REPORT_KIND
    engine_evidence: str | None = None  # what in the report says whose kernels they are (serving.recognise)

    @property
    def metric_sets(self) -> str:
        return self.metric_set

    @property
    def shapes(self) -> str | None:
        return None  # a report records no shapes: its command line (target) may be any script's

    @property
    def multiplexed(self) -> bool:
        return False  # a bare report is one capture: its launches' counters are their own

    @property
    def graph_profiling(self) -> str | None:
        """ncu's --graph-profiling as its recorded command line gave it; None: not given or not recorded."""
        argv = list(self.ncu_command)
        for i, word in enumerate(argv):
            name, eq, value = word.partition("=")
            if name == "--graph-profiling":
                return value if eq else (argv[i + 1] if i + 1 < len(argv) else None)
        return None

    @property
    def context(self) -> Mapping[str, str]:
        """What the recorded command says of the serving engine (serving.context_of): a vLLM report
        is read as vLLM's, its levers at the flag level; nobody told the report the model."""
        from .serving import context_of

        return context_of(self.target, self.engine_evidence)

    @property
    def analytic(self) -> Analytic | None:
        return None


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
