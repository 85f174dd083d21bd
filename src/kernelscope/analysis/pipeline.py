"""The analysis facade: inputs -> records -> assessments, with kernel selection."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ..ceilings import CeilingsFile, DeviceFacts
from ..ceilings import load as load_ceilings
from ..errors import InputError, KernelscopeError
from ..ingest import Inputs, bundle_manifest, expand, iter_inputs, report_manifest
from ..ingest import input_paths as as_paths
from ..model import Assessment, Capture, KernelRecord, RawKernel
from ..serving import Serving, from_context
from .derive import derive
from .verdict import assess

if TYPE_CHECKING:  # the bundle manifest loads with the first directory read (ingest.bundle_manifest)
    from ..manifest import BundleManifest, Recorded
    from ..report_manifest import Analytic


def kernel_matcher(pattern: str | None) -> re.Pattern[str] | str | None:
    """ncu's own convention: `regex:EXPR` searches, anything else must equal the name."""
    if pattern is None:
        return None
    if not isinstance(pattern, str):
        raise KernelscopeError(f"--kernel: expected a string, got {type(pattern).__name__}")
    if pattern.startswith("regex:"):
        try:
            return re.compile(pattern[len("regex:"):])
        except re.error as exc:
            raise KernelscopeError(f"--kernel {pattern!r}: bad regular expression ({exc})") from exc
    return pattern


def selected(rec: KernelRecord, matcher: re.Pattern[str] | str | None) -> bool:
    if matcher is None:
        return True
    if isinstance(matcher, str):
        return matcher in (rec.name, rec.name_full)
    return bool(matcher.search(rec.name) or matcher.search(rec.name_full))


def load(paths: Inputs, kernel: str | None = None) -> list[KernelRecord]:
    """Every profiled launch in the inputs as a KernelRecord (no ceilings needed)."""
    return list(load_iter(paths, kernel))


def load_iter(paths: Inputs, kernel: str | None = None) -> Iterator[KernelRecord]:
    return records_of(iter_inputs(as_paths(paths)), kernel_matcher(kernel))


def records_of(raws: Iterable[RawKernel], matcher: re.Pattern[str] | str | None) -> Iterator[KernelRecord]:
    """The launches the --kernel matcher selects, as records."""
    return (r for r in map(derive, raws) if selected(r, matcher))


def _is_dir(p: Path) -> bool:
    """Whether an input is a directory; a path the system refuses (too long, not permitted) is one error."""
    try:
        return p.is_dir()
    except OSError as exc:
        raise InputError(p, f"cannot read ({exc.strerror or exc})") from None


def bundles(paths: Inputs) -> dict[Path, BundleManifest]:
    """The manifests of the bundle directories among the inputs, keyed by directory."""
    return {p: m for p in as_paths(paths) if (m := bundle_manifest(p) if _is_dir(p) else None) is not None}


def contexts(paths: Inputs) -> dict[Path, Recorded]:
    """Each input's capture context, in input order: a bundle's manifest, keyed by its directory,
    and a bare report's own (ingest.report_manifest), keyed by the report, for a report given alone
    or in a directory that is not a bundle. A CSV export records none."""
    found: dict[Path, Recorded] = {}
    for p in as_paths(paths):
        manifest = bundle_manifest(p) if _is_dir(p) else None
        if manifest is not None:
            found[p] = manifest
        else:
            found.update((r, m) for r in expand([p]) if (m := report_manifest(r)) is not None)
    return found


def capture_of(m: Recorded) -> Capture:
    return Capture(m.ncu.version if m.ncu else None, m.metric_sets, m.clock_control, m.graph_profiling,
                   m.multiplexed)


Home = tuple["Serving | None", "Capture | None", "Analytic | None"]  # what Judge holds for one report


class Judge(NamedTuple):
    """Everything besides a launch's own counters that decides its Assessment: the ceilings, the
    measured ceilings, the bundles' analytic work and the --kernel filter. Plain data, so a worker
    process judges its part of a file exactly as this process would (report/stream.py)."""

    table: CeilingsFile
    hw: str | None
    measured: CeilingsFile | None
    analytic: Mapping[Path, Analytic | None]  # bundle directory -> its harness op's work, if any
    matcher: re.Pattern[str] | str | None
    serving: Mapping[Path, Serving | None]  # bundle directory -> its serving config
    capture: Mapping[Path, Capture]  # bundle directory or bare report -> its capture
    homes: dict[str, Home]  # a report's entries in the three above, found at its first launch (not each launch)

    def __call__(self, raws: Iterable[RawKernel]) -> Iterator[Assessment]:
        """The selected launches among `raws`, judged one at a time as they are read."""
        return map(self.one, records_of(raws, self.matcher))

    def _home(self, source: Path, of: Mapping[Path, Any]) -> Any:
        """What `of` holds for the bundle the report `source` is in, if any."""
        if not any(of.values()):
            return None
        home = next((d for d in of if source.is_relative_to(d)), None)
        return None if home is None else of[home]

    def one(self, rec: KernelRecord) -> Assessment:
        measured = None if self.measured is None else (self.measured.pick(rec.device), self.measured.origin)
        home = self.homes.get(rec.source)
        if home is None:
            source = Path(rec.source)
            home = self.homes[rec.source] = (self._home(source, self.serving), self._home(source, self.capture),
                                             self._home(source, self.analytic))
        serving, capture, analytic = home
        return assess(rec, self.table.pick(rec.device, self.hw, DeviceFacts.of(rec.device, rec.metrics)),
                      serving, capture=capture, analytic=analytic, measured=measured,
                      ceilings_origin=self.table.origin)


def judge_for(
    paths: Inputs,
    kernel: str | None = None,
    hw: str | None = None,
    ceilings: str | os.PathLike[str] | None = None,
    achievable: str | os.PathLike[str] | None = None,
) -> tuple[Judge, dict[Path, Recorded]]:
    """The Judge of these inputs, and their capture contexts (contexts): the ceilings, manifests and
    reports' own records are read (and refused) here, before the first launch."""
    table = load_ceilings(ceilings)
    measured = load_ceilings(achievable) if achievable else None
    found = contexts(as_paths(paths))
    return Judge(table, hw, measured, {d: m.analytic for d, m in found.items()}, kernel_matcher(kernel),
                 {d: from_context(m.context) for d, m in found.items()},
                 {d: capture_of(m) for d, m in found.items()}, {}), found


def analyze(
    paths: Inputs,
    kernel: str | None = None,
    hw: str | None = None,
    ceilings: str | os.PathLike[str] | None = None,
    achievable: str | os.PathLike[str] | None = None,
) -> tuple[list[Assessment], CeilingsFile]:
    """Records placed against the ceilings of their device (or of `hw` for all of them); with
    `achievable` (e.g. `kernelscope ceilings measure` output) also against measured ceilings, side
    by side; kernels from a harness bundle also carry counted-vs-analytic work."""
    judge, _ = judge_for(paths, kernel, hw, ceilings, achievable)
    return list(judge(iter_inputs(as_paths(paths)))), judge.table
