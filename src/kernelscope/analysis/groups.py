"""Launches of the same kernel, together: what a reader means by "a kernel" (one row a kernel,
the frontier ranked by a kernel's total time) while the per-launch figures stay available."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..model import Assessment, Lever, LimiterKind


@dataclass(frozen=True)
class KernelGroup:
    """Every launch of one kernel (same name, same report), slowest first."""

    name: str
    source: str
    launches: tuple[Assessment, ...]

    @property
    def total_ns(self) -> float | None:
        """Summed duration; None if any launch's duration was not measured."""
        times = [a.record.duration_ns for a in self.launches]
        return None if any(t is None for t in times) else sum(t for t in times if t is not None)

    @property
    def mean_ns(self) -> float | None:
        total = self.total_ns
        return None if total is None else total / len(self.launches)

    @property
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

    @property
    def representative(self) -> Assessment:
        """The launch whose verdict stands for the kernel: the longest launch of the limiter kind
        that holds most of the kernel's time, so the group's verdict is where its time goes."""
        kind = next(iter(self.time_by_limiter))
        return next(a for a in self.launches if a.limiter.kind == kind)


def group(items: Sequence[Assessment]) -> list[KernelGroup]:
    """Groups in order of first appearance; launches inside a group longest first."""
    found: dict[tuple[str, str], list[Assessment]] = {}
    for a in items:
        found.setdefault((a.record.source, a.record.name), []).append(a)
    return [KernelGroup(name, source, tuple(sorted(launches, key=lambda a: -(a.record.duration_ns or 0))))
            for (source, name), launches in found.items()]


@dataclass(frozen=True)
class KernelSummary:
    """What the frontier needs of a kernel: its launch count, total time and the levers of its
    representative launch, without the launches themselves."""

    name: str
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
        self._kinds: dict[tuple[str, str], dict[LimiterKind, _Kind]] = {}
        self._seen = 0

    def add(self, a: Assessment) -> None:
        kinds = self._kinds.setdefault((a.record.source, a.record.name), {})
        kind = kinds.setdefault(a.limiter.kind, _Kind())
        duration = a.record.duration_ns
        kind.durations.append(duration)
        if kind.longest is None or (duration or 0.0) > kind.longest:  # group() sorts longest first, stably
            kind.longest, kind.first, kind.levers = duration or 0.0, self._seen, a.next_levers
        self._seen += 1

    def summaries(self) -> list[KernelSummary]:
        return [self._summary(source, name, kinds) for (source, name), kinds in self._kinds.items()]

    @staticmethod
    def _summary(source: str, name: str, kinds: dict[LimiterKind, _Kind]) -> KernelSummary:
        durations = [d for k in kinds.values() for d in k.durations]
        total = None if any(d is None for d in durations) else sum(_longest_first(durations))
        # time_by_limiter: kinds in the order group()'s sorted launches meet them, then by summed time
        met = sorted(kinds.items(), key=lambda kv: (-(kv[1].longest or 0.0), kv[1].first))
        spent = sorted(((sum(_longest_first(k.durations, 0.0)), k) for _, k in met), key=lambda tk: -tk[0])
        return KernelSummary(name, source, len(durations), total, spent[0][1].levers)


def _longest_first(durations: Iterable[float | None], unmeasured: float | None = None) -> list[float]:
    """Durations in group()'s launch order (longest first), unmeasured ones read as `unmeasured`."""
    ordered = sorted(durations, key=lambda d: -(d or 0.0))
    return [unmeasured if d is None else d for d in ordered] if unmeasured is not None else \
        [d for d in ordered if d is not None]
