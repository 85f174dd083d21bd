"""A multiplexed bundle's launches merged back (capture --multiplex): each run collected one counter
group on its own launches of a kernel; the n-th launch of each group together make
one launch with every group's counters, and each figure says which launch it came from.

Merged only where the launches did the same work: the same grid and block, and a duration within
DURATION_SPREAD_PCT (or DURATION_SPREAD_FLOOR_NS, whichever is wider) of the reference launch's, the
one of median duration. A launch outside that is not merged: its group's counters stay out, so the
figures they feed are unmeasured, with the reason. The merged launch's duration is the median of the
merged launches' (each group measures it).
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path

from .. import catalogue
from ..errors import InputError
from ..manifest import BundleManifest, CaptureRecord
from ..model import Part, RawKernel

# Launches of one kernel in steady state vary this much and still count as the same work. Measured on
# the H200 (docs/measurements.md, "Multiplexed capture"): the toy copy kernel's 31 launches, one a group,
# spread 2.6 %; vLLM's decode kernels over 5 µs (a MoE server, 14 attach sessions) within 8.3 % of their
# median (nvjet GEMMs 8.8-9.8 µs), its 3-4 µs RMS norms 3.20-3.94 µs (0.6 µs over their median, 17 %):
# a short kernel's spread is launch jitter, not work, hence a floor in time beside the relative bound
DURATION_SPREAD_PCT = 10.0
DURATION_SPREAD_FLOOR_NS = 1000.0


def _refusal(raw: RawKernel, ref: RawKernel) -> str | None:
    """Why `raw` is not the same work as the reference launch, or None."""
    if (raw.grid, raw.block) != (ref.grid, ref.block):
        return f"grid {raw.grid} block {raw.block}, the reference launch ran grid {ref.grid} block {ref.block}"
    d, r = raw.metrics.get(catalogue.DURATION), ref.metrics.get(catalogue.DURATION)
    if d is None or r is None:
        return "its duration was not collected, so it cannot be known to be the same work"
    if r > 0 and abs(d - r) > max(r * DURATION_SPREAD_PCT / 100, DURATION_SPREAD_FLOOR_NS):
        return (f"ran {d / 1e3:,.2f} µs against the reference launch's {r / 1e3:,.2f} µs ({(d - r) / r * 100:+.1f} %, "
                f"over the {DURATION_SPREAD_PCT:g} % (at least {DURATION_SPREAD_FLOOR_NS / 1e3:g} µs) two launches "
                "of one kernel may differ)")
    return None


_FAILED = "failed to capture (the bundle's manifest says why)"
_FAILURES = {"replay-failed": "were not collected: kernel replay failed on a launch of this capture (the bundle's "
                              "manifest says which), and these counters take several passes"}


def _group(c: CaptureRecord) -> int:
    return c.group or 0


def _reference(launches: Sequence[tuple[int, int | None, RawKernel]]) -> RawKernel:
    """Of the launches on the most common grid and block, the one of median duration (the lower of two
    middles; the first group's when none is timed): one odd launch does not set the bar for the rest."""
    shapes = Counter((raw.grid, raw.block) for _, _, raw in launches)
    shape = max(shapes, key=lambda k: shapes[k])  # the first seen of the most common
    alike = [raw for _, _, raw in launches if (raw.grid, raw.block) == shape]
    timed = sorted((raw for raw in alike if raw.metrics.get(catalogue.DURATION) is not None),
                   key=lambda raw: raw.metrics[catalogue.DURATION])
    return timed[(len(timed) - 1) // 2] if timed else alike[0]


def merge(launches: Sequence[tuple[int, int | None, RawKernel]]) -> RawKernel:
    """One launch from the n-th launch of each group: (group, ncu's passes for it, launch). A counter
    every merged launch holds (the duration, launch attributes) is the reference launch's (_reference),
    but the duration, which is their median."""
    ref = _reference(launches)
    common = set(ref.metrics).intersection(*(raw.metrics for _, _, raw in launches))
    metrics = dict(ref.metrics)
    parts = []
    kept = []
    for group, passes, raw in launches:
        why = None if raw is ref else _refusal(raw, ref)
        own = tuple(sorted(set(raw.metrics) - common))
        parts.append(Part(group, raw.launch_id, raw.source, raw.metrics.get(catalogue.DURATION), own, passes, why))
        if why is None:
            kept.append(raw)
            for name in own:
                metrics.setdefault(name, raw.metrics[name])
    times = [t for raw in kept if (t := raw.metrics.get(catalogue.DURATION)) is not None]
    if times:
        metrics[catalogue.DURATION] = statistics.median(times)
    rules = tuple(dict.fromkeys(r for raw in kept for r in raw.rules))
    return replace(ref, metrics=metrics, rules=rules, parts=tuple(parts),
                   out_of_range=tuple(dict.fromkeys(n for raw in kept for n in raw.out_of_range)))


def read(manifest: BundleManifest, where: Path, reports: Sequence[Path],
         read_report: Callable[[Path], Iterator[RawKernel]]) -> Iterator[RawKernel]:
    """The bundle's launches merged: its reports (`reports`, the manifest's list as ingest found
    them) read with `read_report`, the n-th launch of a kernel in each group's run merged, kernels
    in the order they first appear. A kernel is its name, grid and block: an engine runs one kernel
    on several shapes (vLLM's fused MoE on its gate-up and its down projection, one cuBLAS kernel on
    two GEMMs), and each session starts at another point of a step, so the n-th launch of a name
    alone would pair different work. A group that collected no launch of a kernel (a filter whose
    launches went to another kernel) is said in the merged launch's notes."""
    by_report = {c.report: c for c in manifest.captures if c.report is not None}
    runs = [by_report.get(rel) for rel in manifest.reports]
    if None in runs or len(runs) != len(reports):
        raise InputError(where, "a multiplexed bundle whose reports are not its capture runs' (each report names "
                                "the counter group it holds): it cannot be merged")
    by_kernel: dict[tuple[str, str | None, str | None], dict[int, list[tuple[int | None, RawKernel]]]] = {}
    for run, path in zip(runs, reports, strict=True):
        assert run is not None
        group = run.group if run.group is not None else 0
        for i, raw in enumerate(read_report(path)):
            passes = run.passes[i] if i < len(run.passes) else None
            by_kernel.setdefault((raw.name_full, raw.grid, raw.block), {}).setdefault(group, []).append((passes, raw))
    failed: dict[str, list[int]] = {}
    for c in sorted((c for c in manifest.captures if c.group is not None and c.report is None), key=_group):
        failed.setdefault(_FAILURES.get(c.causes[0] if c.causes else "", _FAILED), []).append(_group(c))
    ran = sorted({c.group for c in manifest.captures if c.group is not None and c.report is not None})
    for groups in by_kernel.values():
        missing = [g for g in ran if g not in groups]
        for n in range(max(map(len, groups.values()))):
            launches = [(g, *groups[g][n]) for g in sorted(groups) if n < len(groups[g])]
            merged = merge(launches)
            absent = missing + [g for g in sorted(groups) if n >= len(groups[g])]
            said = [f"multiplexed: counter group(s) {', '.join(map(str, sorted(absent)))} collected no launch of this "
                    "kernel on this grid and block (their runs' launches went to other kernels or shapes the filter "
                    "matched): the figures they feed are unmeasured; an exact --kernel name and a larger "
                    "--launch-count collect more groups on the same work"] if absent else []
            said += [f"multiplexed: counter group(s) {', '.join(map(str, groups_))} {why}: the figures they feed are "
                     "unmeasured" for why, groups_ in failed.items()]
            yield replace(merged, notes=(*merged.notes, *said)) if said else merged
