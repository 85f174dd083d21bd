"""Reader for `.ncu-rep` files through NVIDIA's official `ncu_report` module (PyPI: ncu-report)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

from ..catalogue import BLOCK_DIMS, DEVICE_NAME, GRID_DIMS, MAX_MEM_CLOCK_KHZ, MAX_SM_CLOCK_KHZ, NUMERIC
from ..errors import InputError
from ..files import open_input
from ..model import RawKernel, RuleResult, Workload, in_range
from .detect import Framing, check_ncu_rep_framing
from .names import kernel_name
from .units import misfit, unit_factor, unknown

# ncu's rule message types (NvRules.MsgType)
RULE_KINDS = {0: "none", 1: "ok", 2: "optimization", 3: "warning", 4: "error"}


def _ncu_report() -> Any:
    try:
        import ncu_report
    except ImportError as exc:  # pragma: no cover - the wheel is a hard dependency
        raise InputError("ncu_report", "the ncu-report package is not installed") from exc
    return ncu_report


NUMERIC_WANTED = tuple(sorted(NUMERIC))
CLOCK_ATTRIBUTES = {"sm_max_hz": MAX_SM_CLOCK_KHZ, "memory_max_hz": MAX_MEM_CLOCK_KHZ}  # kHz in the report
Sized = Callable[[int], None]  # told a report's launch count once it is open (progress)


def _dims(metrics: dict[str, float], names: tuple[str, ...]) -> str | None:
    """'(x, y, z)' from the launch's counters, already read with the rest (catalogue.WANTED)."""
    if any(n not in metrics for n in names):
        return None
    return "(" + ", ".join(str(int(metrics[n])) for n in names) + ")"


def text(value: Any) -> str:
    """A string from the report as valid UTF-8 text: the module hands bytes that are not UTF-8 (a
    damaged name) through as lone surrogates, which no JSON, CSV or HTML writer can encode; they
    become U+FFFD."""
    out = str(value)
    return out if out.isascii() else out.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _kind(value: Any) -> str:
    return RULE_KINDS.get(value, str(value)) if isinstance(value, int) else str(value)


def code_file(action: Any) -> str | None:
    """The source file of the kernel's first executed instruction, from the line information a
    report with ncu's SourceCounters section keeps (`--set full`, `detailed`): a `.py` file is a
    Triton kernel's, and its path says whose (vLLM's, torch.compile's, the user's). None without."""
    executed = action.metric_by_name("inst_executed")
    if executed is None:
        return None
    ids = executed.correlation_ids()
    if ids is None or not executed.num_instances():
        return None
    info = action.source_info(ids.as_uint64(0))
    return None if info is None or not info.file_name() else text(info.file_name())


def rules(action: Any) -> tuple[RuleResult, ...]:
    """ncu's own rule results for this launch (empty when the capture had no sections)."""
    out = []
    for r in action.rule_results_as_dicts():
        msg = r.get("rule_message") or {}
        title, message = text(msg.get("title") or ""), text(msg.get("message") or "")
        if not title and not message:
            continue
        speedup = (r.get("speedup_estimation") or {}).get("speedup")
        out.append(RuleResult(rule=text(r.get("rule_identifier", "")), section=text(r.get("section_identifier", "")),
                              title=title, message=message, kind=_kind(msg.get("type")),
                              speedup_pct=float(speedup) if isinstance(speedup, (int, float)) and in_range(speedup)
                              else None))
    return tuple(out)


class _Metrics:
    """Reads the catalogue's counters from each launch of one report. Every name is looked up
    (a missing one costs half a microsecond, and launches of one report may hold different metric
    sets); a value is read by its kind (IMetric.value() builds a dict of functions a call), and a
    metric's kind and unit factor are taken once a report: ~100 counters a launch, each call
    through the module's wrappers costing about half a microsecond."""

    def __init__(self, ncu_report: Any, shown: str) -> None:
        self.shown = shown
        kinds = ncu_report.IMetric
        self.read_as = {kinds.ValueKind_DOUBLE: kinds.as_double, kinds.ValueKind_FLOAT: kinds.as_double,
                        kinds.ValueKind_UINT32: kinds.as_uint64, kinds.ValueKind_UINT64: kinds.as_uint64}
        self.how: dict[str, tuple[Any, float] | None] = {}  # name -> (reader, unit factor); None: not a number

    def read(self, action: Any) -> tuple[dict[str, float], tuple[str, ...]]:
        """The launch's counters in base units, and the names of those out of range (left out)."""
        metrics: dict[str, float] = {}
        wrong: list[str] = []
        lookup, how = action.metric_by_name, self.how
        for name in NUMERIC_WANTED:
            metric = lookup(name)
            if metric is None:
                continue
            if name not in how:
                how[name] = self._how(name, metric)
            known = how[name]
            if known is None:
                continue
            raw = float(known[0](metric))
            scaled = raw * known[1]
            if in_range(raw) and in_range(scaled):  # NaN, inf, absurd or subnormal, stored or scaled: as in CSV
                metrics[name] = scaled
            else:
                wrong.append(name)
        return metrics, tuple(wrong)

    def _how(self, name: str, metric: Any) -> tuple[Any, float] | None:
        value_of = self.read_as.get(metric.kind())
        if value_of is None:  # a string or no value: not a number
            return None
        unit = text(metric.unit() or "")
        factor = unit_factor(unit)
        if factor is None:
            raise InputError(self.shown, unknown(name, unit))
        if problem := misfit(name, unit):
            raise InputError(self.shown, problem)
        return value_of, factor


@dataclass
class _Opened:
    """A report as ncu_report loaded it, and the launches read from it so far, by (range, index).
    ncu_report frees neither: a loaded report and each launch it hands out (~0.4 MB for a launch of
    a full-set capture, again on each action_by_idx of the same launch) stay until the process
    ends, so each file is loaded once a process and each launch asked for once: reading a file
    again (the context, then the launches; the in-memory and the streamed analyses; parts) costs
    no memory more."""

    context: Any
    framing: Framing  # what its blocks declare and record of the session, from the one walk of them
    actions: dict[tuple[int, int], Any] = field(default_factory=dict)

    def action(self, r: int, a: int) -> Any:
        """Launch `a` of range `r`, loaded the first time it is asked for."""
        found = self.actions.get((r, a))
        if found is None:
            found = self.actions[(r, a)] = self.context.range_by_idx(r).action_by_idx(a)
        return found


Identity = tuple[str, int, int, int, int]  # realpath, inode, size, mtime, ctime: the same file, unchanged
_OPENED: dict[Identity, _Opened] = {}  # every report loaded in this process


def identity(path: Path) -> Identity | None:
    """The file's identity, which changes when the file is replaced or written (None: no such file)."""
    try:
        st = path.stat()
    except OSError:
        return None
    return os.path.realpath(path), st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


@contextmanager
def _loaded(path: Path, shown: str) -> Iterator[_Opened]:
    """The report, for as long as it is read, once its framing is whole and ncu_report finds every
    launch its blocks declare (detect.py: ncu_report reads a damaged file without complaint, and
    silently gives fewer launches). ncu_report opens a report by a text name, and reads each launch
    from it when the launch is reached: a name that is not UTF-8 (a legacy file name, its bytes as
    surrogates here) is opened through a link with a plain name, kept until the reading ends (and
    the report then not kept: its launches could no longer be read)."""
    key = identity(path)
    kept = _OPENED.get(key) if key is not None else None
    if kept is not None:  # read whole before (framing and launch count checked), unchanged since
        yield kept
        return
    with open_input(path, what="report") as fh:
        framing = check_ncu_rep_framing(fh, shown)
    with ExitStack() as stack:
        try:
            str(path).encode("utf-8")
            openable = str(path)
        except UnicodeEncodeError:
            link = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="kernelscope-"))) / "report.ncu-rep"
            link.symlink_to(path.resolve())
            openable = str(link)
        ncu_report = _ncu_report()
        try:
            context = ncu_report.load_report(openable)
        except Exception as exc:  # the module raises plain exceptions for corrupt files
            raise InputError(shown, f"not a readable .ncu-rep report ({exc})") from exc
        if context is None:
            raise InputError(shown, "not a readable .ncu-rep report")
        found = _count(context)
        if not framing.other_results and found != framing.results:  # range, graph results: counted apart
            raise InputError(shown, f"ncu_report reads {found:,} of the {framing.results:,} launches the file's "
                                    "blocks hold: the report is damaged")
        opened = _Opened(context, framing)
        if key is not None and openable == str(path):  # a link made for it is gone after: not kept
            _OPENED[key] = opened
        yield opened


def _count(context: Any) -> int:
    return sum(context.range_by_idx(r).num_actions() for r in range(context.num_ranges()))


def launches(path: Path) -> int:
    """How many profiled launches the report holds (loading it reads no launch)."""
    with _loaded(path, str(path)) as opened:
        return _count(opened.context)


def framing(path: Path, display: str | None = None) -> Framing:
    """What the report's blocks declare and record of the session, as its load walked them."""
    with _loaded(path, display or str(path)) as opened:
        return opened.framing


def read(path: Path, display: str | None = None, start: int = 0, stop: int | None = None,
         sized: Sized | None = None) -> Iterator[RawKernel]:
    """One RawKernel per profiled launch, numbered across ranges like ncu's CSV "ID" column;
    `start`, `stop`: only those launches (ingest/parts.py), the others left unread; `sized`: told
    the report's launch count once it is open."""
    shown = display or str(path)
    ncu_report = _ncu_report()
    reader = _Metrics(ncu_report, shown)
    function, demangled = ncu_report.IAction.NameBase_FUNCTION, ncu_report.IAction.NameBase_DEMANGLED
    kinds = ncu_report.IAction
    workloads: dict[int, Workload] = {kinds.WorkloadType_GRAPH: "graph", kinds.WorkloadType_RANGE: "range",
                                      kinds.WorkloadType_CMDLIST: "cmdlist"}
    with _loaded(path, shown) as opened:
        context = opened.context
        if sized is not None:
            sized(_count(context))
        first = 0  # the launch number of the range's first action
        for r in range(context.num_ranges()):
            rng = context.range_by_idx(r)
            count = rng.num_actions()
            for a in range(max(0, start - first), count if stop is None else min(count, stop - first)):
                action = opened.action(r, a)
                device_metric = action.metric_by_name(DEVICE_NAME)
                metrics, out_of_range = reader.read(action)
                if not metrics and device_metric is None and not action.metric_names():
                    raise InputError(shown, f"launch {first + a} holds no metrics: the file is damaged, or was "
                                            "moved, removed or changed while it was read (ncu_report reads each "
                                            "launch when it is reached)")
                yield RawKernel(
                    source=shown,
                    launch_id=first + a,
                    name=kernel_name(text(action.name(demangled)), text(action.name(function))),
                    name_full=text(action.name(demangled)),
                    device=None if device_metric is None else text(device_metric.value()),
                    grid=_dims(metrics, GRID_DIMS),
                    block=_dims(metrics, BLOCK_DIMS),
                    metrics=metrics,
                    rules=rules(action),
                    out_of_range=out_of_range,
                    code_file=code_file(action),
                    workload=workloads.get(action.workload_type(), "kernel"),
                )
            first += count


class FirstLaunch(NamedTuple):
    """What ncu_report exposes of a capture's settings, from a report's first launch (ncu asks
    every launch of a session for the same sections)."""

    sections: tuple[str, ...] = ()  # section identifiers; section0 is a --metrics list
    metrics: frozenset[str] = frozenset()
    device: str | None = None
    clocks_hz: Mapping[str, float] = MappingProxyType({})  # the device's maximum clocks (read-only: shared default)
    kernels: tuple[str, ...] = ()  # every launch's demangled name, once each: whose kernels they are


# launches whose names are read for whose kernels they are: each costs about 1 ms through the module, and an
# engine's own kernels (vLLM's vllm:: ones run every layer) show within the first few hundred
KERNELS_NAMED = 256


def first_launch(path: Path, display: str | None = None) -> FirstLaunch:
    """The report's first launch's sections, metric names, device and clocks (none: no launch)."""
    shown = display or str(path)
    with _loaded(path, shown) as opened:
        context = opened.context
        at = next((r for r in range(context.num_ranges()) if context.range_by_idx(r).num_actions()), None)
        if at is None:
            return FirstLaunch()
        action = opened.action(at, 0)
        metrics, _ = _Metrics(_ncu_report(), shown).read(action)  # as every launch's: kinds, units, range
        clocks = {key: 1e3 * metrics[name] for key, name in CLOCK_ATTRIBUTES.items() if name in metrics}
        device = action.metric_by_name(DEVICE_NAME)
        demangled = _ncu_report().IAction.NameBase_DEMANGLED
        names: dict[str, None] = {}
        seen = 0
        for r in range(context.num_ranges()):
            for i in range(min(context.range_by_idx(r).num_actions(), KERNELS_NAMED - seen)):
                names.setdefault(text(opened.action(r, i).name(demangled))[:4096])  # kept: read() takes it from there
                seen += 1
        sections = getattr(action, "sections", None)  # ncu 2025.3.1's own ncu_report has no IAction.sections
        return FirstLaunch(tuple(text(s.identifier()) for s in sections()) if sections else (),
                           frozenset(text(n) for n in action.metric_names()),
                           None if device is None else text(device.value()), clocks, tuple(names))
