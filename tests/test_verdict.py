"""Roofline placement and verdicts against the packaged ceilings, on real captures."""

from __future__ import annotations

from pathlib import Path

import pytest

import kernelscope
from kernelscope.analysis import rules
from kernelscope.analysis.levers import saved_fraction
from kernelscope.analysis.verdict import roof_pct, tail_idle_pct
from kernelscope.ceilings import load as load_ceilings
from kernelscope.errors import CeilingsError, InputError


def assess(fx: Path, name: str, **kw: str) -> kernelscope.Assessment:
    (item,), _ = kernelscope.analyze(str(fx / name), **kw)
    return item


def test_bf16_gemm_is_compute_bound_against_bf16_peak(fx: Path) -> None:
    a = assess(fx, "gemm_bf16.ncu-rep")
    assert a.bound == "compute"
    assert a.compute_ceiling_key == "h200-sxm.compute.bf16"
    assert a.memory_ceiling_key == "h200-sxm.memory.hbm"
    assert a.pct_sol_compute == pytest.approx(100 * 274_877_906_944 / 338_432e-9 / 989e12)
    assert a.ridge_flops_per_byte == pytest.approx(989 / 4.8)


def test_fp8_gemm_is_held_to_fp8_peak(fx: Path) -> None:
    a = assess(fx, "fp8_gemm.ncu-rep")
    assert a.compute_ceiling_key == "h200-sxm.compute.fp8"
    assert a.pct_sol_compute == pytest.approx(100 * 17_179_869_184 / 19_360e-9 / 1979e12, rel=0.01)


def test_decode_gemm_is_memory_bound(fx: Path) -> None:
    a = assess(fx, "decode_gemm.ncu-rep")
    assert a.bound == "memory"
    assert a.pct_sol_memory == pytest.approx(100 * 136_788_736 / 35_264e-9 / 4.8e12)
    assert a.next_levers[0].rule == "batch-rows"  # at the HBM roof: one level up
    assert "use-tensor-cores" not in [lv.rule for lv in a.next_levers]  # it uses them; it is memory-bound


def test_softmax_left_of_its_ridge_is_issue_bound_not_at_a_flop_roof(fx: Path) -> None:
    a = assess(fx, "softmax.ncu-rep.gz")
    assert a.record.dominant_precision == "fp32"
    assert a.compute_ceiling_key == "h200-sxm.compute.fp32"
    assert a.record.arithmetic_intensity is not None and a.ridge_flops_per_byte is not None
    assert a.record.arithmetic_intensity < a.ridge_flops_per_byte
    assert a.bound == "compute" and a.limiter.kind == "issue"  # issue slots 62 %, 21 % of HBM, FLOP 13 %
    assert a.next_levers[0].rule == "stream-once"


def test_divergent_kernel_gets_divergence_story_and_lever(fx: Path) -> None:
    a = assess(fx, "divergent.ncu-rep")
    assert any(line.startswith("branch divergence") for line in a.limiters)
    assert a.next_levers[0].rule == "fix-divergence"


def test_basic_set_is_provisional_never_at_a_roof(fx: Path) -> None:
    """`--set basic` holds no FLOP or DRAM byte counter: the busiest unit of ncu's SpeedOfLight breakdown
    (the tensor pipe, 93 % of elapsed cycles) names the side, provisionally; no %SoL, never "at the roof",
    and the first lever is the capture that settles it."""
    a = assess(fx, "gemm_basic.ncu-rep")
    assert (a.bound, a.provisional, a.limiter.kind, a.limiter.name) == ("compute", True, "pipe", "tensor pipe")
    assert a.limiter.pct == pytest.approx(93.40, abs=0.01)
    assert a.pct_sol_compute is None and a.pct_sol_memory is None and roof_pct(a) is None
    assert a.verdict.startswith("provisional compute-side: the tensor pipe is the busiest unit at 93 %")
    assert "at the" not in a.verdict and "--set roofline" in a.verdict
    assert a.next_levers[0].rule == "recapture-roofline"
    assert a.record.sources["sm_clock_hz"] == "gpc__cycles_elapsed.avg.per_second"


def test_every_lever_has_direction_and_confirmation(fx: Path) -> None:
    items, _ = kernelscope.analyze([str(p) for p in sorted(fx.glob("*.ncu-rep*"))])
    assert len(items) == 27  # vllm_offline holds 15 launches
    for a in items:
        assert a.next_levers, a.record.name
        value = [saved_fraction(lv.gain, lv.unlock_x) / lv.cost for lv in a.next_levers]
        assert value == sorted(value, reverse=True)  # the frontier's order within a kernel
        assert all(lv.expected and lv.confirm for lv in a.next_levers)


def test_rule_lines() -> None:
    assert (rules.NEAR_ROOF_PCT, rules.AT_ROOF_PCT) == (60.0, 80.0)  # ncu SOLBottleneck's lines
    assert rules.KIND_BOUND["pipe"] == "compute" and rules.KIND_BOUND["l2"] == "memory"
    assert rules.KIND_BOUND["launch"] == rules.KIND_BOUND["grid"] == "latency"
    assert tail_idle_pct(1.0) == 0
    assert tail_idle_pct(1.25) == pytest.approx(37.5)


def test_hw_override_and_unknown_device(fx: Path, tmp_path: Path) -> None:
    a = assess(fx, "gemm_bf16.ncu-rep", hw="b200")
    assert a.compute_ceiling_key == "b200.compute.bf16" and a.compute_ceiling_tflops == 2250
    with pytest.raises(CeilingsError, match="no ceilings for --hw nope"):
        assess(fx, "gemm_bf16.ncu-rep", hw="nope")
    # a details export names no device: its CC 9.0, 132 SMs and 3.2 GHz DRAM clock fit the H200 alone
    items, _ = kernelscope.analyze(str(fx / "decode_gemm-details.csv"))
    assert items[0].hw_key == "h200-sxm" and items[0].memory_ceiling_tbps == 4.8


def test_ceilings_file_override_and_validation(fx: Path, tmp_path: Path) -> None:
    custom = tmp_path / "measured.yaml"
    custom.write_text(
        "devices:\n  h200-measured:\n    match: ['NVIDIA H200']\n"
        "    memory: {hbm: {tbps: 4.3, source: 'device copy, measured'}}\n"
        "    compute: {bf16: {tflops: 790, source: 'matmul 8192^3, measured'}}\n"
    )
    a = assess(fx, "gemm_bf16.ncu-rep", ceilings=str(custom))
    assert a.compute_ceiling_key == "h200-measured.compute.bf16"
    assert a.pct_sol_compute == pytest.approx(100 * 274_877_906_944 / 338_432e-9 / 790e12)
    bad = tmp_path / "bad.yaml"
    bad.write_text("devices:\n  x:\n    memory: {hbm: {tbps: fast}}\n    compute: {}\n")
    with pytest.raises(InputError, match="bad.yaml: x.memory.hbm.tbps must be a positive number"):
        load_ceilings(bad)


def test_packaged_ceilings_cover_required_devices_and_precisions() -> None:
    table = load_ceilings()
    for key in ("h100-sxm", "h200-sxm", "b200", "b300", "gb300"):
        dev = table.devices[key]
        assert dev.memory.value and dev.memory.source
        for prec in ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "fp4", "int8"):
            assert prec in dev.compute and dev.compute[prec].source, (key, prec)
    assert table.devices["h200-sxm"].compute["fp8"].value == 1979
    assert table.devices["gb300"].compute["fp4"].value == 15000


def test_b300_is_its_own_entry_and_b200_hbm_says_which_figure() -> None:
    table = load_ceilings()
    b300, gb300, b200 = table.devices["b300"], table.devices["gb300"], table.devices["b200"]
    assert table.pick("NVIDIA B300 SXM6 AC").hw_key == "b300"
    assert b300.compute["fp4"].value == 13125 < gb300.compute["fp4"].value == 15000
    assert b300.compute["fp64"].value == 1.25 and "HGX B300" in b300.compute["fp4"].source
    assert b200.memory.value == 8.0 and "7.7 TB/s" in b200.memory.source and b200.compute["fp4"].value == 9000


def test_each_peak_carries_its_clock_and_path_roofs() -> None:
    h200 = load_ceilings().devices["h200-sxm"]
    assert h200.compute["bf16"].clock_hz == 1.83e9 and h200.compute["fp8"].clock_hz == 1.83e9  # tensor peaks
    assert h200.compute["fp32"].clock_hz == 1.98e9 and h200.compute["fp64_tensor"].clock_hz == 1.98e9
    assert h200.memory.clock_hz == 3.201e9 and "FlashAttention-3" in h200.compute["bf16"].clock_source
    assert h200.compute["bf16"].at_clock(1.61e9) == pytest.approx(989 * 1.61 / 1.83)
    assert h200.path_roof("mma.sync").ratio == 0.667 and h200.path_roof("wgmma").ratio == 1.0
    assert load_ceilings().devices["b200"].path_roof("mma.sync").ratio is None  # not sourced: said, not guessed
