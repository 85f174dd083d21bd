"""Launches of the same kernel, together: what a reader means by "a kernel" (one row a kernel,
the frontier ranked by a kernel's total time) while the per-launch figures stay available.

A kernel is its full (demangled) name in one report: two instantiations of one template (a causal
and a non-causal flash_fwd_kernel, two head dims) share the short name a person says but are
different kernels with different verdicts, so they are never merged; where their short names
collide, `display_names` shows the template arguments that tell them apart."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from os.path import commonprefix
from typing import NamedTuple

from ..ingest.names import template_name
from ..model import Assessment, KernelRecord, Lever, LimiterKind

Key = tuple[str, str]  # (report, full kernel name): what makes launches one kernel


def identity(rec: KernelRecord) -> Key:
    return rec.source, rec.name_full or rec.name


def display_names(kernels: Iterable[tuple[str, str]]) -> list[str]:
    """(short name, full name) pairs -> what to show for each: the short name, unless another
    kernel of that short name has a different full name; then the template arguments that differ
    between them, `flash_fwd_kernel<…(bool)1…>`, whole arguments (tables cut long names in the
    middle, so the part that tells them apart must be short; the full name is in --details)."""
    pairs = list(kernels)
    fulls: dict[str, set[str]] = {}
    for name, full in pairs:
        fulls.setdefault(name, set()).add(full or name)
    shown = {}
    for name, full_names in fulls.items():
        templates = {template_name(f) for f in full_names} if len(full_names) > 1 else set()
        if len(templates) > 1:
            shown[name] = _differences(sorted(templates))
    return [shown[name][template_name(full or name)] if name in shown else name for name, full in pairs]


def _differences(names: list[str]) -> dict[str, str]:
    """Each name cut to what differs from the others: the common head and tail dropped, widened to
    whole template arguments."""
    head = len(commonprefix(names))
    tail = len(commonprefix([n[::-1] for n in names]))
    out = {}
    for n in names:
        start, end = head, max(len(n) - tail, head)
        while start > 0 and n[start - 1] not in "<,":
            start -= 1
        while end < len(n) and n[end] not in ",>":
            end += 1
        base = n.split("<", 1)[0]
        before = "…" if start > len(base) + 1 else ""  # arguments left out before the ones shown
        after = "…" if end < len(n) - 1 else ""
        out[n] = f"{base}<{before}{n[start:end].strip()}{after}>"
    return out


@dataclass(frozen=True)
class KernelGroup:
    """Every launch of one kernel (same full name, same report), slowest first."""

    name: str
    name_full: str
    source: str
    launches: tuple[Assessment, ...]

    @cached_property
    def total_ns(self) -> float | None:
        """Summed duration; None if any launch's duration was not measured."""
        times = [a.record.duration_ns for a in self.launches]
        return None if any(t is None for t in times) else sum(t for t in times if t is not None)

    @property
    def mean_ns(self) -> float | None:
        total = self.total_ns
        return None if total is None else total / len(self.launches)

    @cached_property
    def time_by_limiter(self) -> dict[LimiterKind, float]:
        """Summed duration of the launches behind each limiter kind, most first (launches of one
        kernel can differ: a decode and a prefill shape through the same GEMM)."""
        out: dict[LimiterKind, float] = {}
        for a in self.launches:
            out[a.limiter.kind] = out.get(a.limiter.kind, 0.0) + (a.record.duration_ns or 0.0)
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))

    @property
    def consistent(self) -> bool:
        """Every launch has the same limiter kind."""
        return len(self.time_by_limiter) == 1

    @cached_property
    def representative(self) -> Assessment:
        """The launch whose verdict stands for the kernel: the longest launch of the limiter kind
        that holds most of the kernel's time, so the group's verdict is where its time goes."""
        kind = next(iter(self.time_by_limiter))
        return next(a for a in self.launches if a.limiter.kind == kind)

    def summary(self) -> KernelSummary:
        """What the frontier needs of this kernel (as Tally gives it for streamed launches)."""
        return KernelSummary(self.name, self.name_full, self.source, len(self.launches), self.total_ns,
                             self.representative.next_levers)


def group(items: Sequence[Assessment], across_reports: bool = False) -> list[KernelGroup]:
    """Groups in order of first appearance; launches inside a group longest first. `across_reports`:
    a kernel is its full name alone (the reports of one bundle), its source the first launch's."""
    found: dict[Key, list[Assessment]] = {}
    for a in items:
        source, full = identity(a.record)
        found.setdefault(("" if across_reports else source, full), []).append(a)
    return [KernelGroup(launches[0].record.name, full, source or launches[0].record.source,
                        tuple(sorted(launches, key=lambda a: -(a.record.duration_ns or 0))))
            for (source, full), launches in found.items()]


class KernelSummary(NamedTuple):
    """What the frontier needs of a kernel: its launch count, total time and the levers of its
    representative launch, without the launches themselves."""

    name: str
    name_full: str
    source: str
    launches: int
    total_ns: float | None
    levers: tuple[Lever, ...]


@dataclass
class _Kind:
    """The launches of one limiter kind within a kernel: their durations, and the longest (first
    one read on a tie) with its index and levers."""

    durations: list[float | None] = field(default_factory=list)
    longest: float | None = None
    first: int = 0
    levers: tuple[Lever, ...] = ()


class Tally:
    """KernelGroup's figures kept while launches stream past, a few numbers a launch: summaries()
    gives, group by group, what group() would (the same float sums, in the same order), so a
    writer can drop each Assessment once written and still end with the frontier."""

    def __init__(self) -> None:
        self._kinds: dict[Key, dict[LimiterKind, _Kind]] = {}
        self._names: dict[Key, str] = {}
        self._seen = 0

    def add(self, a: Assessment) -> None:
        key = identity(a.record)
        kinds = self._kinds.setdefault(key, {})
        self._names.setdefault(key, a.record.name)
        kind = kinds.setdefault(a.limiter.kind, _Kind())
        duration = a.record.duration_ns
        kind.durations.append(duration)
        if kind.longest is None or (duration or 0.0) > kind.longest:  # group() sorts longest first, stably
            kind.longest, kind.first, kind.levers = duration or 0.0, self._seen, a.next_levers
        self._seen += 1

    def merge(self, later: Tally) -> None:
        """Add the tally of the launches that followed these (a worker's part of the file): the
        result is the tally of all of them added one by one, ties going to the earlier launch."""
        for key, kinds in later._kinds.items():
            mine = self._kinds.setdefault(key, {})
            self._names.setdefault(key, later._names[key])
            for kind, theirs in kinds.items():
                have = mine.setdefault(kind, _Kind())
                have.durations += theirs.durations
                if have.longest is None or (theirs.longest or 0.0) > have.longest:
                    have.longest, have.first, have.levers = theirs.longest, self._seen + theirs.first, theirs.levers
        self._seen += later._seen

    def summaries(self) -> list[KernelSummary]:
        return [self._summary(source, self._names[(source, full)], full, kinds)
                for (source, full), kinds in self._kinds.items()]

    @staticmethod
    def _summary(source: str, name: str, full: str, kinds: dict[LimiterKind, _Kind]) -> KernelSummary:
        durations = [d for k in kinds.values() for d in k.durations]
        total = None if any(d is None for d in durations) else sum(_longest_first(durations))
        # time_by_limiter: kinds in the order group()'s sorted launches meet them, then by summed time
        met = sorted(kinds.items(), key=lambda kv: (-(kv[1].longest or 0.0), kv[1].first))
        spent = sorted(((sum(_longest_first(k.durations, 0.0)), k) for _, k in met), key=lambda tk: -tk[0])
        return KernelSummary(name, full, source, len(durations), total, spent[0][1].levers)


def _longest_first(durations: Iterable[float | None], unmeasured: float | None = None) -> list[float]:
    """Durations in group()'s launch order (longest first), unmeasured ones read as `unmeasured`."""
    ordered = sorted(durations, key=lambda d: -(d or 0.0))
    return [unmeasured if d is None else d for d in ordered] if unmeasured is not None else \
        [d for d in ordered if d is not None]
