"""Kernels, not launches: a kernel's launches grouped, its verdict where its time goes, and the
next-lever frontier ranked by total time (ours, or a joined whole-run profile's shares)."""

from __future__ import annotations

from pathlib import Path

import pytest

import kernelscope
from kernelscope.analysis.frontier import frontier
from kernelscope.analysis.groups import group


def test_frontier_ranks_kernels_by_total_time(fx: Path) -> None:
    """bench/data/many: 299 launches of vectorized_elementwise_kernel are three kernels (clamp, mul,
    add: three instantiations of one template), each with its own verdict and lever."""
    items, _ = kernelscope.analyze(str(fx.parent.parent / "bench" / "data" / "many.ncu-rep.gz"))
    groups = group(items)
    elementwise = [g for g in groups if g.name == "vectorized_elementwise_kernel"]
    assert sorted(len(g.launches) for g in elementwise) == [99, 100, 100]
    clamp = next(g for g in elementwise if "launch_clamp_scalar" in g.name_full)
    # 0.48 waves, but its ~4.3 us is within 1.25x of an H200's launch-and-ramp floor for its 4.2 MB (3.9 us);
    # one of its 99 launches ran slower than that (a grid under one wave), the others as the rest
    assert all(g.consistent for g in elementwise if g is not clamp)
    assert sum(a.limiter.kind == "launch" for a in clamp.launches) == 98
    assert clamp.representative.limiter.kind == "launch"
    rules = [lv.rule for lv in clamp.representative.next_levers]
    assert rules[0] == "cuda-graph" and {"fuse-launch", "more-work-a-launch"} <= set(rules)
    assert not {"fill-the-grid", "more-ctas", "recapture-stalls"} & set(rules)  # its 1,024 CTAs cover the SMs
    rows = frontier(items)
    top = rows[0]
    kernel = next(g for g in elementwise if g.name_full == top.kernel_full)
    assert top.kernel.startswith("vectorized_elementwise_kernel<…at::native::<unnamed>::launch_clamp_scalar(")
    assert top.launches == len(kernel.launches) == 99 and top.share_basis.startswith("ncu: 99 launches")
    assert top.time_share_pct == pytest.approx(100 * kernel.total_ns / sum(a.record.duration_ns for a in items))
    rand = next(g for g in groups if g.name == "distribution_elementwise_grid_stride_kernel")
    joined = frontier(items, {(rand.source, rand.name_full): 3.0}, "nsys totals")
    assert joined[0].kernel == "distribution_elementwise_grid_stride_kernel" and joined[0].time_share_pct == 100
    assert {r.share_basis for r in joined if r.time_share_pct is None} == {"absent from the nsys totals"}
