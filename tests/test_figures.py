"""Figures derived from real H200 captures: exact FLOPs, precision classes, bytes, occupancy."""

from __future__ import annotations

from pathlib import Path

import pytest

import kernelscope
from kernelscope.columns import FLAT


def one(fx: Path, name: str) -> kernelscope.KernelRecord:
    (rec,) = kernelscope.load(str(fx / name))
    return rec


def test_bf16_gemm_flops_are_2mnk_in_bf16_class(fx: Path) -> None:
    rec = one(fx, "gemm_bf16.ncu-rep")
    assert rec.flops is not None
    assert rec.flops["tensor_bf16"] == 2 * 4096 * 8192 * 4096 == 274_877_906_944
    assert rec.flops_total == 274_877_906_944
    assert rec.dominant_precision == "tensor_bf16"
    assert rec.achieved_tflops == pytest.approx(274_877_906_944 / 338_432e-9 / 1e12)
    assert rec.tensor_path == "wgmma"  # cuBLAS nvjet on Hopper


def test_fp8_scaled_mm_flops_in_fp8_class(fx: Path) -> None:
    rec = one(fx, "fp8_gemm.ncu-rep")
    assert rec.flops is not None
    assert rec.flops["tensor_fp8"] == 2 * 256 * 4096 * 8192 == 17_179_869_184
    assert rec.flops["tensor_bf16"] == 0
    assert rec.dominant_precision == "tensor_fp8"


def test_decode_gemm_bytes_match_its_weights(fx: Path) -> None:
    rec = one(fx, "decode_gemm.ncu-rep")
    assert rec.flops is not None and rec.flops["tensor_bf16"] == 2 * 8 * 8192 * 8192
    weights = 8192 * 8192 * 2
    assert rec.dram_bytes is not None and abs(rec.dram_bytes - weights) / weights < 0.05
    m = rec.metrics
    assert rec.dram_bytes == m["dram__bytes_read.sum"] + m["dram__bytes_write.sum"] == 136_788_736  # both counted


def test_flash_attention_counts_both_matmuls(fx: Path) -> None:
    """Non-causal forward: QK^T and PV, 2 * 2*S*S*D per head = 4*B*H*S^2*D, on the mma.sync path (FA2),
    where cuDNN's kernel does the same work on wgmma."""
    fa2 = one(fx, "attention_fa2.ncu-rep.gz")
    cudnn = one(fx, "attention_cudnn.ncu-rep")
    assert fa2.name == "flash_fwd_kernel" and cudnn.name.startswith("cudnn_generated_fort_native_sdpa_sm90")
    for rec in (fa2, cudnn):
        assert rec.flops is not None and rec.flops["tensor_bf16"] == 4 * 4 * 32 * 2048 * 2048 * 128
        assert rec.warp_stalls is not None and sum(rec.warp_stalls.values()) == pytest.approx(100.0)
    assert fa2.tensor_path == "mma.sync" and cudnn.tensor_path == "wgmma"


def test_fma_counts_twice(fx: Path) -> None:
    rec = one(fx, "divergent.ncu-rep")
    # 2^22 threads: a quarter run 256 FMAs, a quarter 128, a quarter 64 (FMUL+FADD fused by nvcc)
    assert rec.flops is not None
    assert rec.flops["fp32"] == 2 * 469_762_048 + 1_048_576
    assert 469_762_048 == (1 << 20) * (256 + 128 + 64)
    # its HFMA2 are all HFMA2.MMA register moves on the tensor pipe: no fp16 FLOP
    assert rec.metrics["sm__sass_thread_inst_executed_op_hfma_pred_on.sum"] == 2_097_152
    assert rec.flops["fp16"] == 0


def test_divergent_kernel_shows_divergence(fx: Path) -> None:
    rec = one(fx, "divergent.ncu-rep")
    assert rec.branch_divergence_pct == pytest.approx(50.0)
    assert rec.simt_efficiency_pct is not None and rec.simt_efficiency_pct < 30
    uniform = one(fx, "gemm_bf16.ncu-rep")
    assert uniform.simt_efficiency_pct is not None and uniform.simt_efficiency_pct > 99


def test_occupancy_figures(fx: Path) -> None:
    rec = one(fx, "decode_gemm.ncu-rep")
    assert rec.registers_per_thread == 168
    assert rec.shared_mem_per_block_bytes == 165_332  # as ncu reports it: static 0 + dynamic 164,308 + driver 1,024
    parts = (rec.shared_mem_static_bytes, rec.shared_mem_dynamic_bytes, rec.shared_mem_driver_bytes)
    assert parts == (0, 164_308, 1024)
    assert rec.occupancy_limiter == "registers+shared_mem"  # both allow 1 block/SM
    assert rec.theoretical_occupancy_pct == pytest.approx(18.75)
    assert rec.waves_per_sm == pytest.approx(128 / 132)


def test_basic_set_is_unmeasured_not_zero(fx: Path) -> None:
    rec = one(fx, "gemm_basic.ncu-rep")
    assert rec.flops is None and rec.dram_bytes is None and rec.arithmetic_intensity is None
    assert {"flops", "dram_bytes", "arithmetic_intensity", "achieved_tflops"} <= set(rec.unmeasured)
    assert rec.sm_busy_pct == pytest.approx(93.4, abs=0.1)  # measured, and kept apart from FLOP SoL


def test_no_branch_is_not_100_pct_divergence(fx: Path) -> None:
    rec = one(fx, "nobranch.ncu-rep")
    assert rec.metrics["smsp__sass_branch_targets.sum"] == 0
    assert rec.branch_divergence_pct is None and "branch_divergence_pct" not in rec.unmeasured
    assert any("0/0" in n for n in rec.notes)


def test_hfma2_mma_moves_are_not_fp16_flops(fx: Path) -> None:
    """The SASS of the softmax fixture: every HFMA2 it executes is HFMA2.MMA (a register move on the
    tensor pipe), 75,497,472 thread-instructions, which ncu's hfma counter includes."""
    import csv
    import gzip

    rows = list(csv.reader(gzip.open(fx / "softmax-sass.csv.gz", "rt")))
    head = next(i for i, r in enumerate(rows) if "Source" in r)
    col = rows[head].index("Predicated-On Thread Instructions Executed")
    src = rows[head].index("Source")
    hfma2 = [r for r in rows[head + 1:] if len(r) > col and "HFMA2" in r[src]]
    assert hfma2 and all("HFMA2.MMA" in r[src] for r in hfma2)
    moves = sum(int(r[col].replace(",", "")) for r in hfma2)
    rec = one(fx, "softmax.ncu-rep.gz")
    assert moves == rec.metrics["sm__sass_thread_inst_executed_op_hfma_pred_on.sum"] == 75_497_472
    assert rec.flops is not None and rec.flops["fp16"] == 0 and rec.dominant_precision == "fp32"


def test_partial_flop_classes_are_counted_and_listed(fx: Path) -> None:
    """A report with the bf16 tensor counter but not the int8/fp64 ones (shared fixture g_rmin)."""
    rec = one(fx, "g_rmin.ncu-rep")
    assert rec.flops is not None and rec.flops["tensor_bf16"] == 274_877_906_944
    assert rec.flops_missing == ("tensor_int8", "tensor_fp64")
    assert any("not collected for: tensor_int8, tensor_fp64" in n for n in rec.notes)


def test_stall_shares_sum_to_100(fx: Path) -> None:
    rec = one(fx, "decode_gemm.ncu-rep")
    assert rec.warp_stalls is not None
    assert sum(rec.warp_stalls.values()) == pytest.approx(100.0)
    assert next(iter(rec.warp_stalls)) == "long_scoreboard"
    assert "selected" not in rec.warp_stalls


def test_dataframe(fx: Path) -> None:
    df = kernelscope.to_dataframe(kernelscope.load([str(fx / "gemm_bf16.ncu-rep"), str(fx / "fp8_gemm.ncu-rep")]))
    assert list(df["flops.tensor_fp8"]) == [0, 17_179_869_184]
    assert "metrics" not in df.columns and "pipe_busy.fma" in df.columns
    assert list(df["dominant_precision"]) == ["tensor_bf16", "tensor_fp8"]
    assert tuple(df.columns) == tuple(kernelscope.to_dataframe([]).columns)  # fixed by the spec, not the data
    split = [f"{d}_{axis}" for d in ("grid", "block") for axis in "xyz"]
    assert [c for c in df.columns if c not in split] == [c for c in FLAT if c not in ("grid", "block")]  # kernels.csv's


def test_zero_denominator_is_null_with_its_reason() -> None:
    """A launch that read no DRAM byte (everything in L2): FLOP per DRAM byte is x/0, not unmeasured."""
    from kernelscope import catalogue as C
    from kernelscope.analysis.derive import derive
    from kernelscope.model import RawKernel

    m = {C.DURATION: 4_000.0, C.DRAM_READ: 0.0, C.DRAM_WRITE: 0.0, C.TENSOR_OPS["bf16_dst_fp32"]: 1e6}
    rec = derive(RawKernel("synthetic", 0, "k", "k", None, None, None, m))
    assert rec.dram_bytes == 0 and rec.arithmetic_intensity is None and rec.achieved_dram_tbps == 0
    assert "arithmetic_intensity" not in rec.unmeasured
    assert any(n.startswith("arithmetic_intensity is undefined: dram_bytes is 0") for n in rec.notes)


def test_blackwell_counter_names_and_fp4_class() -> None:
    """No Blackwell capture exists here: a launch holding gb100's counter names (docs/hopper-measurements.md §1-2).
    fp8/fp6 work lands in the f8f6f4 names, NVFP4/MXFP4 in fp4_dst_fp32, tcgen05 on the TC pipe."""
    from kernelscope import catalogue as C
    from kernelscope.analysis.derive import derive
    from kernelscope.model import RawKernel

    ops = C.TENSOR_OPS
    idle = ("bf16_dst_fp32", "fp16_dst_fp16", "fp16_dst_fp32", "tf32_dst_fp32", "int8", "fp64", "fp4_fp6_fp8_dst_fp16")
    m = {C.COMPUTE_CAPABILITY: 10.0, **{ops[o]: 0.0 for o in idle},
         ops["fp4_dst_fp32"]: 9e12, ops["fp4_fp6_fp8_dst_fp32"]: 1e12, C.TENSOR_TC_INST: 1e6, C.DURATION: 2e6}
    rec = derive(RawKernel("synthetic", 0, "k", "k", "NVIDIA B200", None, None, m))
    assert rec.flops is not None and rec.flops["tensor_fp4"] == 9e12 and rec.flops["tensor_fp8"] == 1e12
    assert rec.flops_missing == ("fp64", "fp32", "fp16")  # no SIMT counters given; Hopper's tensor names not missing
    assert rec.tensor_path == "tcgen05" and rec.dominant_precision == "tensor_fp4"
    hopper = one(Path(__file__).parent / "fixtures", "gemm_bf16.ncu-rep")
    assert hopper.flops_missing == () and "tensor_fp4" not in (hopper.flops or {})  # no fp4 class on Hopper



def test_figures_from_later_sources_keep_catalogue_order_and_each_counter_set_its_own_plan() -> None:
    """derive plans a figure's sources once per counter set: figures read straight from a counter and
    figures computed are had in two passes, yet `sources` lists them in the catalogue's order, and a
    launch holding other counters is planned for its own."""
    from kernelscope import catalogue as C
    from kernelscope.analysis.derive import derive
    from kernelscope.model import RawKernel

    # the SM clock from SpeedOfLight's cycles over the duration (computed, 3rd source), DRAM bytes as one sum
    # (copied, 3rd) and SM-active over SpeedOfLight's elapsed cycles (computed, 2nd): the copied one is had
    # first, yet the order is the catalogue's, sm_clock_hz, dram_bytes, sm_active_pct
    m = {C.DURATION: 1e4, C.GPC_CYCLES_MAX: 1.7e4, C.DRAM_SUM: 3.2e6, C.SM_CYCLES_ACTIVE: 4e3, C.GPC_CYCLES: 1.6e4}
    first, again = (derive(RawKernel("synthetic", i, "k", "k", None, None, None, dict(m))) for i in (0, 1))
    assert list(first.sources) == ["sm_clock_hz", "dram_bytes", "sm_active_pct"] == list(again.sources)
    assert first.sources["sm_active_pct"] == f"100 x {C.SM_CYCLES_ACTIVE} / {C.GPC_CYCLES}"
    assert (first.sm_clock_hz, first.dram_bytes, first.sm_active_pct) == (1.7e9, 3.2e6, 25.0)
    other = derive(RawKernel("synthetic", 2, "k", "k", None, None, None, {**m, C.SM_CLOCK: 1.98e9}))
    assert other.sm_clock_hz == 1.98e9 and list(other.sources) == ["dram_bytes", "sm_active_pct"]
