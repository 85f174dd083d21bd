"""Launches of the same kernel, together: what a reader means by "a kernel" (one row a kernel,
the frontier ranked by a kernel's total time) while the per-launch figures stay available."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..model import Assessment, LimiterKind


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
