"""Kernels, not launches: a kernel's launches grouped, its verdict where its time goes, and the
next-lever frontier ranked by total time (ours, or a joined whole-run profile's shares)."""

from __future__ import annotations

from pathlib import Path

import pytest

import kernelscope
from kernelscope.analysis.frontier import frontier
from kernelscope.analysis.groups import group


def test_frontier_ranks_kernels_by_total_time(fx: Path) -> None:
    items, _ = kernelscope.analyze(str(fx.parent.parent / "bench" / "data" / "many.ncu-rep.gz"))
    groups = {g.name: g for g in group(items)}
    elementwise = groups["vectorized_elementwise_kernel"]
    assert len(elementwise.launches) == 299 and elementwise.consistent
    assert elementwise.representative.limiter.kind == "grid"  # 0.48 waves, where all its time goes
    rows = frontier(items)
    top = rows[0]
    assert top.kernel == "vectorized_elementwise_kernel" and top.launches == 299
    assert top.time_share_pct == pytest.approx(100 * elementwise.total_ns / sum(a.record.duration_ns for a in items))
    assert top.share_basis.startswith("ncu: 299 launches")
    joined = frontier(items, {"distribution_elementwise_grid_stride_kernel": 3.0}, "nsys totals")
    assert joined[0].kernel == "distribution_elementwise_grid_stride_kernel" and joined[0].time_share_pct == 100
    assert {r.share_basis for r in joined if r.time_share_pct is None} == {"absent from the nsys totals"}
