"""The bundle manifest: one frozen, typed record of a capture's full context, written by every
capture (local program, attach, Kubernetes pod) and read by every reader.

A reviewer trusts a figure only with its context: which ncu and driver on which GPU, which metric
set, how the kernels were scoped, what ran (secrets redacted), and for a harness op the analytic
work. Reading checks every field's type, so a hand-edited or hostile manifest is one clear error,
never a crash or a silent "?".
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args, get_origin, get_type_hints

from .errors import InputError
from .files import read_text

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

    def to_json(self) -> str:
        return json.dumps(_plain(self), indent=1, allow_nan=False) + "\n"


# -- typed JSON <-> dataclasses ------------------------------------------------------------------
T = TypeVar("T")


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


def _convert(tp: Any, value: Any, where: str) -> Any:
    origin = get_origin(tp)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        options = get_args(tp)
        if value is None and type(None) in options:
            return None
        problems = []
        for option in options:
            if option is type(None):
                continue
            try:
                return _convert(option, value, where)
            except _TypeProblem as exc:
                problems.append(str(exc))
        raise _TypeProblem(problems[0] if problems else f"{where}: unexpected null")
    if origin is Literal:
        if value not in get_args(tp):
            raise _TypeProblem(f"{where}: {value!r} is not one of {', '.join(map(repr, get_args(tp)))}")
        return value
    if origin is tuple:
        if not isinstance(value, list):
            raise _TypeProblem(f"{where}: expected a list, got {type(value).__name__}")
        (item,) = get_args(tp)[:1]
        return tuple(_convert(item, v, f"{where}[{i}]") for i, v in enumerate(value))
    if origin in (Mapping, dict) or tp is dict:
        if not isinstance(value, dict):
            raise _TypeProblem(f"{where}: expected a map, got {type(value).__name__}")
        _, item = get_args(tp) or (str, Any)
        return {str(k): _convert(item, v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _dataclass(tp, value, where)
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _TypeProblem(f"{where}: expected a number, got {value!r}")
        return float(value)
    if tp in (int, str, bool):
        if not isinstance(value, tp) or (tp is int and isinstance(value, bool)):
            raise _TypeProblem(f"{where}: expected {tp.__name__}, got {value!r}")
        return value
    raise _TypeProblem(f"{where}: unsupported type {tp!r}")  # pragma: no cover - a schema bug


class _TypeProblem(Exception):
    pass


def _dataclass(cls: type[T], value: Any, where: str) -> T:
    if not isinstance(value, dict):
        raise _TypeProblem(f"{where}: expected a map, got {type(value).__name__}")
    hints = get_type_hints(cls)
    kwargs = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name in value:
            kwargs[f.name] = _convert(hints[f.name], value[f.name], f"{where}.{f.name}" if where else f.name)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise _TypeProblem(f"{where + '.' if where else ''}{f.name}: missing")
    return cls(**kwargs)


def parse(doc: Any, path: Path | str) -> BundleManifest:
    if not isinstance(doc, dict) or doc.get("kind") != KIND:
        raise InputError(path, "not a kernelscope bundle manifest")
    if doc.get("schema_version") != SCHEMA_VERSION:
        raise InputError(path, f"bundle manifest schema_version {doc.get('schema_version')!r}; this kernelscope "
                               f"reads {SCHEMA_VERSION} (recapture, or use the kernelscope that wrote it)")
    try:
        return _dataclass(BundleManifest, doc, "")
    except _TypeProblem as exc:
        raise InputError(path, f"bad bundle manifest: {exc}") from exc


def read(path: Path) -> BundleManifest:
    try:
        doc = json.loads(read_text(path, 16 << 20, "bundle manifest"))
    except ValueError as exc:
        raise InputError(path, f"bundle manifest is not valid JSON ({exc})") from exc
    return parse(doc, path)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
