"""The analysis facade: inputs -> records -> assessments, with kernel selection."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from ..ceilings import CeilingsFile
from ..ceilings import load as load_ceilings
from ..errors import KernelscopeError
from ..ingest import Inputs, bundle_manifest, iter_inputs
from ..ingest import input_paths as as_paths
from ..manifest import Analytic, BundleManifest
from ..model import Assessment, KernelRecord
from .derive import derive
from .roofline import place
from .verdict import assess


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
    matcher = kernel_matcher(kernel)
    return (r for r in map(derive, iter_inputs(as_paths(paths))) if selected(r, matcher))


def bundles(paths: Inputs) -> dict[Path, BundleManifest]:
    """The manifests of the bundle directories among the inputs, keyed by directory."""
    found = {}
    for p in as_paths(paths):
        manifest = bundle_manifest(p) if p.is_dir() else None
        if manifest is not None:
            found[p] = manifest
    return found


def counted_vs_analytic(a: Assessment, analytic: Analytic) -> Assessment:
    """Counted work over the op's analytic work, e.g. a causal attention computing masked tiles."""
    out: dict[str, float | str] = {"describe": analytic.describe}
    lines = []
    for key, expected, counted in (("flops", analytic.flops, a.record.flops_total),
                                   ("bytes", analytic.bytes, a.record.dram_bytes)):
        if expected and counted is not None:
            ratio = counted / expected
            out[key] = expected
            out[f"counted_over_analytic_{key}"] = ratio
            if abs(ratio - 1) > 0.05:
                lines.append(f"counted {key} are {ratio:.2f}x the analytic {key} of {analytic.describe}"
                             + (" (work beyond the op's need, e.g. masked tiles)" if ratio > 1 else ""))
    return replace(a, analytic=out, limiters=a.limiters + tuple(lines))


def judged(
    paths: Inputs,
    kernel: str | None = None,
    hw: str | None = None,
    ceilings: str | os.PathLike[str] | None = None,
    achievable: str | os.PathLike[str] | None = None,
) -> tuple[Iterator[Assessment], CeilingsFile]:
    """The ceilings, and the launches judged one at a time as they are read: a writer can drop
    each Assessment once written, so memory stays flat however many launches the inputs hold.
    The inputs' ceilings and bundle manifests are read (and refused) before the first launch."""
    items = as_paths(paths)
    table = load_ceilings(ceilings)
    measured = load_ceilings(achievable) if achievable else None
    found = bundles(items)
    return _judge(items, kernel, hw, table, measured, found), table


def _judge(items: list[Path], kernel: str | None, hw: str | None, table: CeilingsFile,
           measured: CeilingsFile | None, found: dict[Path, BundleManifest]) -> Iterator[Assessment]:
    analytic = {d: m.analytic for d, m in found.items() if m.analytic is not None}
    for rec in load_iter(items, kernel):
        a = assess(rec, table.pick(rec.device, hw))
        if measured is not None:
            p = place(rec, measured.pick(rec.device))
            a = replace(a, achievable={
                "ceilings_file": measured.origin, "compute_ceiling_key": p.compute_ceiling_key,
                "pct_compute": p.pct_sol_compute, "memory_ceiling_key": p.memory_ceiling_key,
                "pct_memory": p.pct_sol_memory})
        if analytic:
            home = next((m for d, m in found.items() if Path(rec.source).is_relative_to(d)), None)
            if home is not None and home.analytic is not None:
                a = counted_vs_analytic(a, home.analytic)
        yield a


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
    items, table = judged(paths, kernel, hw, ceilings, achievable)
    return list(items), table
