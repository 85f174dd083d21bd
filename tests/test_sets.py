"""One kernel, one verdict, whatever set captured it (issue 19): the same eleven kernels captured on an
H200 with every set a user might have used (tests/fixtures/README.md, "Capture sets"). Every set that
holds FLOP and DRAM byte counters gives the same bound and limiter, and the same work; the others give
a provisional verdict naming the same side; and no figure is unmeasured while a source of it is in
the report."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import kernelscope
from kernelscope import catalogue as C
from kernelscope.analysis.derive import arch, evaluate
from kernelscope.analysis.verdict import roof_pct
from kernelscope.ingest.ncu_rep import _ncu_report
from kernelscope.model import Assessment

ROOFLINE_SETS = ("full", "ncu_roofline", "ks_roofline", "ks_stalls", "ks_sol")  # FLOP and DRAM byte counters
SOL_ONLY_SETS = ("basic", "default", "sol")  # ncu's SpeedOfLight breakdown, no FLOP or byte counter
SETS = (*ROOFLINE_SETS, *SOL_ONLY_SETS, "detailed")  # detailed: DRAM bytes and SIMT rates, no tensor FLOP
PARTS = ("torch", "divergent", "copy")
GEMM_FLOP = 2 * 4096 * 8192 * 4096  # also 4·B·H·S²·D of both attention kernels (B4 H32 S2048 D128)
# kernel -> (bound, limiter kind, counted FLOP) as every roofline set reads it
EXPECTED: dict[str, tuple[str, str, float | None]] = {
    "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT": ("compute", "tensor", GEMM_FLOP),
    # 0.97 waves, 1.48x the launch-and-ramp floor for its 38 MB: latency-bound on its CTAs' own work
    "nvjet_sm90_qqtst_128x64_128x8_1x2_h_bz_algo2_TNT": ("latency", "latency", 2 * 256 * 4096 * 8192),
    "nvjet_sm90_tst_64x8_64x16_2x1_v_bz_NNT": ("memory", "hbm", 2 * 8 * 8192 * 8192),
    "flash_fwd_kernel": ("latency", "latency", GEMM_FLOP),
    "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_cga1x1x1_kernel0_0":
        ("compute", "tensor", GEMM_FLOP),
    "mm_kernel": ("compute", "tensor", GEMM_FLOP),
    "cunn_SoftMaxForwardReg": ("compute", "issue", None),
    "vectorized_elementwise_kernel": ("latency", "launch", None),
    "distribution_elementwise_grid_stride_kernel": ("compute", "issue", None),
    "divergent_fma": ("compute", "pipe", None),
    "copy_f4": ("memory", "hbm", None),
}
# a roofline verdict on a FLOP roof reads, without FLOP counters, as the unit that did the work
UNIT_OF = {"tensor": "pipe"}
# a kernel's latency story from the figures a set holds (without DRAM bytes, no floor to hold it to)
NO_BYTES: dict[str, str] = {}


def judged(sets_dir: Path, name: str) -> dict[str, Assessment]:
    """kernel -> its assessment, from one set's three reports."""
    out = {}
    for part in PARTS:
        items, _ = kernelscope.analyze(str(sets_dir / f"{name}-{part}.ncu-rep"))
        out.update({a.record.name: a for a in items})
    return out


@pytest.fixture(scope="module")
def by_set(sets_dir: Path) -> dict[str, dict[str, Assessment]]:
    return {s: judged(sets_dir, s) for s in SETS}


def test_every_set_holds_every_kernel(by_set: dict[str, dict[str, Assessment]]) -> None:
    assert all(set(kernels) == set(EXPECTED) for kernels in by_set.values())


@pytest.mark.parametrize("kernel", EXPECTED)
def test_roofline_sets_give_one_verdict(by_set: dict[str, dict[str, Assessment]], kernel: str) -> None:
    """Bound, limiter and work alike from every set with FLOP and DRAM byte counters; the roof % moves
    only with the run (each set is its own run of the kernel: HBM 80-83 % for the decode GEMM)."""
    bound, kind, flop = EXPECTED[kernel]
    found = {s: by_set[s][kernel] for s in ROOFLINE_SETS}
    assert {s: (a.bound, a.limiter.kind, a.provisional) for s, a in found.items()} == \
        dict.fromkeys(ROOFLINE_SETS, (bound, kind, False))
    if flop is not None:  # the tensor work is the analytic 2·M·N·K; the total (an epilogue's fp32 too) alike
        tensor = {s: sum(v for c, v in (a.record.flops or {}).items() if c.startswith("tensor_"))
                  for s, a in found.items()}
        assert tensor == dict.fromkeys(ROOFLINE_SETS, flop)
    totals = [a.record.flops_total or 0.0 for a in found.values()]
    assert max(totals) - min(totals) <= 1e-6 * max(totals)  # --set full's SIMT rates x cycles round
    dram = [a.record.dram_bytes for a in found.values()]
    assert None not in dram and max(dram) / min(dram) < 1.01  # type: ignore[type-var, operator]
    roofs = [roof_pct(a) for a in found.values()]
    if None not in roofs:
        assert max(roofs) - min(roofs) < 5  # type: ignore[type-var, operator]
    # ncu's roofline set cannot tell HFMA2 math from HFMA2.MMA moves, but bounds it: no verdict "may move"
    assert not [s for s, a in found.items() if "may move" in a.verdict]
    assert {s: a.record.flops_missing for s, a in found.items() if s != "ncu_roofline"} == \
        dict.fromkeys(ROOFLINE_SETS[:1] + ROOFLINE_SETS[2:], ())


@pytest.mark.parametrize("kernel", EXPECTED)
def test_speed_of_light_sets_are_provisional_on_the_same_side(by_set: dict[str, dict[str, Assessment]],
                                                              kernel: str) -> None:
    """`basic`, ncu's default (the same set) and SpeedOfLight alone: the busiest unit names the side,
    labelled provisional, with no %SoL and the capture that would settle it first."""
    bound, kind, _ = EXPECTED[kernel]
    for s in SOL_ONLY_SETS:
        a = by_set[s][kernel]
        unit = NO_BYTES.get(kernel, UNIT_OF.get(kind, kind))
        assert (a.bound, a.limiter.kind, a.provisional) == (bound, unit, True), s
        assert roof_pct(a) is None and a.pct_sol_compute is None and a.pct_sol_memory is None
        assert a.verdict.startswith("provisional") and a.next_levers[0].rule == "recapture-roofline"
        if kind == "tensor":
            assert a.limiter.name == "tensor pipe"


@pytest.mark.parametrize("kernel", EXPECTED)
def test_detailed_is_settled_only_where_no_tensor_work_can_hide(by_set: dict[str, dict[str, Assessment]],
                                                                kernel: str) -> None:
    """`--set detailed` holds DRAM bytes and SIMT FLOP but no tensor FLOP counter: a kernel whose tensor
    pipe did not run is settled; one whose tensor pipe ran (moves included) has no FLOP total and stays
    provisional, unless its measured bytes put it at the HBM roof: memory-bound, compute side unmeasured."""
    bound, kind, _ = EXPECTED[kernel]
    a = by_set["detailed"][kernel]
    idle = a.record.tensor_pipe_active_pct == 0
    at_hbm = not idle and a.limiter.kind == "hbm" and a.limiter.pct_datasheet is not None
    assert (a.bound, a.provisional) == (bound, not idle and not at_hbm)
    assert a.limiter.kind == (kind if idle or at_hbm else UNIT_OF.get(kind, kind))
    if not idle:
        assert a.record.flops_total is None and a.pct_sol_compute is None
    if at_hbm:
        assert "compute side unmeasured: tensor work not counted" in a.verdict


def test_full_set_reads_what_it_holds(by_set: dict[str, dict[str, Assessment]]) -> None:
    """The figures issue 19 found unmeasured or wrong on `--set full` reports."""
    full = by_set["full"]
    fa2 = full["flash_fwd_kernel"]
    assert fa2.record.tensor_path == "mma.sync" and fa2.limiter.kind == "latency"
    assert fa2.runner_up is not None and fa2.runner_up.key == "h200-sxm.compute.bf16@mma.sync"
    assert fa2.next_levers[0].rule == "wgmma-kernel"
    assert full["cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_cga1x1x1_kernel0_0"
                ].record.tensor_path == "wgmma"
    fp8 = full["nvjet_sm90_qqtst_128x64_128x8_1x2_h_bz_algo2_TNT"].record
    assert fp8.l2_bytes is not None and fp8.sources["l2_bytes"] == "lts__t_sectors.sum x 32"
    assert fp8.l2_throughput_pct == pytest.approx(63.7, abs=0.1) and fp8.l2_sectors_pct == pytest.approx(50.0, abs=0.1)
    assert full["divergent_fma"].record.branch_divergence_pct == pytest.approx(50.0)
    assert full["divergent_fma"].record.sources["branch_divergence_pct"].startswith("100 - ")
    copy = full["copy_f4"].record  # no branch ran: the uniform share reads 0, which is not 100 % divergence
    assert copy.branch_divergence_pct is None and "branch_divergence_pct" not in copy.unmeasured
    assert all(a.record.flops is not None and a.record.flops["fp16"] == 0 for a in full.values())


def test_ncu_roofline_set_has_dram_bytes_from_its_rate(by_set: dict[str, dict[str, Assessment]]) -> None:
    rec = by_set["ncu_roofline"]["copy_f4"].record
    assert rec.sources["dram_bytes"] == "dram__bytes.sum.per_second x duration"
    full = by_set["full"]["copy_f4"].record  # 2 GiB read and written, less what L2 kept: 4.27 GB
    assert rec.dram_bytes == pytest.approx(full.dram_bytes, rel=0.001)
    assert rec.dram_bytes == pytest.approx(4.27e9, rel=0.01)


def _names(path: Path) -> Iterator[set[str]]:
    """Each launch's metric names, as ncu_report lists them: what the report holds."""
    ncu_report = _ncu_report()
    ctx = ncu_report.load_report(str(path))
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for i in range(rng.num_actions()):
            yield set(rng.action_by_idx(i).metric_names())


NOT_ON_RECORD = object()


def _value(rec: Any, figure: str) -> Any:
    """A catalogue figure as the record holds it; NOT_ON_RECORD for the catalogue's own steps (simt.*)."""
    group, _, key = figure.partition(".")
    if key and group in ("pipe_busy", "flops"):
        held = getattr(rec, group)
        return None if held is None else held.get(key)
    return getattr(rec, figure, NOT_ON_RECORD)


def test_no_figure_is_unmeasured_while_its_counters_are_in_the_report(fx: Path, sets_dir: Path) -> None:
    """Walk the catalogue against each report's own metric names: a figure with a source that always
    answers, and whose counters (and figures) the report holds, is on the record or does not apply."""
    reports = sorted([*sets_dir.glob("*.ncu-rep"), *fx.glob("*.ncu-rep")])
    checked = 0
    for path in reports:
        for names, rec in zip(_names(path), kernelscope.load(str(path)), strict=True):
            assert {n for n in C.NUMERIC if n in names} <= set(rec.metrics), path.name  # the reader kept them all
            values = {f.name: _value(rec, f.name) for f in C.FIGURES}
            held = set(evaluate(rec.metrics, arch(rec.metrics)).values)  # the catalogue's steps (simt.*) too
            for fig in C.FIGURES:
                value = values[fig.name]
                if fig.name in held if value is NOT_ON_RECORD else (value is not None or fig.name in (
                        "tensor_path", "branch_divergence_pct", "nvlink_bytes_per_s",
                        "nvlink_busier_way_bytes_per_s")
                        and fig.name not in rec.unmeasured):
                    continue  # measured; the path is kept only with tensor work; no branch ran, no link: n/a
                answers = [s for s in fig.sources if not s.declines and s.arch in (None, arch(rec.metrics))
                           and all(n in names or n in held for n in s.needs)]
                assert not answers, (path.name, rec.name, fig.name, answers[0].label)
                checked += 1
    assert checked > 500


def test_speed_of_light_csv_pages_are_provisional_on_the_same_side(fx: Path) -> None:
    """ncu's own exports of the basic capture (`ncu --import basic-torch.ncu-rep --csv --page details`
    and `--page raw`): the details page holds only the SpeedOfLight section's figures, SM and DRAM
    throughput among them; both give the .ncu-rep's provisional sides."""
    items, _ = kernelscope.analyze([str(fx / "sets-basic-details.csv"), str(fx / "sets-basic-raw.csv")],
                                   hw="h200-sxm")
    sides = {(a.record.name, a.record.source.rsplit("-", 1)[-1]): (a.bound, a.provisional) for a in items}
    for page in ("details.csv", "raw.csv"):
        for kernel, (bound, _kind, _) in EXPECTED.items():
            if (kernel, page) in sides:
                assert sides[kernel, page] == (bound, True), (kernel, page)
    details = [a for a in items if a.record.source.endswith("details.csv")]
    assert len(details) == 9 and all(a.record.sm_clock_hz for a in details)  # SpeedOfLight's SM Frequency
