"""Judgement on real H200 captures: the limiter, the tensor path, who owns the code, the lever family,
ncu's own verdict beside ours, and kernels ranked by their total time."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

import kernelscope
from kernelscope import catalogue as C
from kernelscope.analysis.derive import derive
from kernelscope.analysis.levers.common import PULLABLE
from kernelscope.analysis.provenance import classify
from kernelscope.analysis.verdict import assess
from kernelscope.analysis.verdict.bound import boundary
from kernelscope.ceilings import load as load_ceilings
from kernelscope.ingest.names import short_name
from kernelscope.model import Limiter, LimiterKind, RawKernel

HBM = "h200-sxm.memory.hbm"
BF16 = "h200-sxm.compute.bf16"

# fixture, bound, limiter kind, limiter key, tensor path, owner, warp-specialised, next lever, its family
CASES = [
    ("gemm_bf16.ncu-rep", "compute", "tensor", f"{BF16}@wgmma", "wgmma", "library", True, "lower-precision",
     "precision"),
    ("decode_gemm.ncu-rep", "memory", "hbm", HBM, "wgmma", "library", True, "batch-rows", "batching"),
    # 128 CTAs, 0.97 waves (3 % of the slots idle), no roof at 60 % (L2's data path 51 %), 19.4 µs for
    # 38 MB, 1.47x the 13.2 µs measured floor: latency-bound on its CTAs' own work, long_scoreboard the
    # top stall (ncu: Small Grid); another cuBLASLt algorithm gains at most 1.47x, the floor for its bytes
    ("fp8_gemm.ncu-rep", "latency", "latency", C.STALLS["long_scoreboard"], "wgmma", "library", True,
     "another-algorithm", "algorithm"),
    ("attention_fa2.ncu-rep.gz", "latency", "latency", C.STALLS["wait"], "mma.sync", "open", False, "wgmma-kernel",
     "kernel"),
    # 71 % of its roof: another cuDNN engine (gain 2, cost 1) before fp8 attention (gain 3, cost 3)
    ("attention_cudnn.ncu-rep", "compute", "tensor", f"{BF16}@wgmma", "wgmma", "library", True, "another-algorithm",
     "algorithm"),
    ("softmax.ncu-rep.gz", "compute", "issue", C.ISSUE_ACTIVE, None, "open", False, "stream-once", "kernel"),
    # Philox and Box-Muller at the issue limit: generate the numbers where they are used
    ("randn.ncu-rep.gz", "compute", "issue", C.ISSUE_ACTIVE, None, "open", False, "generate-in-consumer", "fusion"),
    ("tiny.ncu-rep.gz", "latency", "launch", C.DURATION, None, "open", False, "cuda-graph", "graphs"),
    ("nobranch.ncu-rep", "memory", "hbm", HBM, None, "user", False, "fuse-away", "fusion"),
    ("divergent.ncu-rep", "compute", "pipe", C.PIPES["fma"], None, "user", False, "fix-divergence", "source"),
    # no FLOP or byte counters: provisional, the busiest unit (the tensor pipe) names the side
    ("gemm_basic.ncu-rep", "compute", "pipe", C.TENSOR_PIPE, None, "library", True, "recapture-roofline", "capture"),
    ("g_rmin.ncu-rep", "compute", "tensor", BF16, None, "library", True, "lower-precision", "precision"),
]


def one(fx: Path, name: str) -> kernelscope.Assessment:
    (a,) = kernelscope.analyze(str(fx / name))[0]
    return a


@pytest.mark.parametrize(("name", "bound", "kind", "key", "path", "owner", "ws", "lever", "family"), CASES)
def test_limiter_path_owner_and_lever(fx: Path, name: str, bound: str, kind: str, key: str, path: str | None,
                                      owner: str, ws: bool, lever: str, family: str) -> None:
    a = one(fx, name)
    assert (a.bound, a.limiter.kind, a.limiter.key) == (bound, kind, key)
    assert a.record.tensor_path == path
    assert (a.provenance.kind, a.provenance.warp_specialised) == (owner, ws)
    assert (a.next_levers[0].rule, a.next_levers[0].family) == (lever, family)
    # only levers the owner can pull, each with its unlock, cost and the metric and capture that confirm it
    assert all(lv.family in PULLABLE[a.provenance.kind] for lv in a.next_levers)
    assert all(lv.expected and lv.confirm and 1 <= lv.cost <= 3 for lv in a.next_levers)
    assert a.evidence and a.evidence[0] == a.limiter.reading


def test_roof_is_held_at_the_measured_clock_with_the_datasheet_beside(fx: Path) -> None:
    """cuBLAS bf16 GEMM at 1.61 GHz: the 989 TFLOP/s peak assumes 1.83 GHz."""
    a = one(fx, "gemm_bf16.ncu-rep")
    r = a.record
    achieved = 274_877_906_944 / 338_432e-9 / 1e12
    assert r.sm_clock_hz is not None and a.limiter.clock_hz == r.sm_clock_hz
    assert a.limiter.pct == pytest.approx(100 * achieved / (989 * r.sm_clock_hz / 1.83e9))  # 93 %
    assert a.limiter.pct_datasheet == pytest.approx(a.pct_sol_compute) == pytest.approx(100 * achieved / 989)  # 82 %
    assert "93 % of it at the measured 1610 MHz (82 % of the datasheet figure)" in a.verdict
    table = load_ceilings().devices["h200-sxm"]
    assert table.compute["bf16"].clock_hz == 1.83e9 and table.compute["fp32"].clock_hz == 1.98e9
    assert "1830 MHz" in table.compute["bf16"].clock_source.replace(",", "")


def test_fa2_is_held_to_the_mma_sync_roof_and_told_to_use_wgmma(fx: Path) -> None:
    a = one(fx, "attention_fa2.ncu-rep.gz")
    r = a.record
    roof = 989 * r.sm_clock_hz / 1.83e9 * 0.667  # type: ignore[operator]
    nearest = a.runner_up
    assert nearest is not None and nearest.key == f"{BF16}@mma.sync"
    assert nearest.pct == pytest.approx(100 * 274_877_906_944 / 801_984e-9 / 1e12 / roof)  # 54 %
    assert "36 % of the chip's roof" in nearest.reading
    wgmma = a.next_levers[0]
    # the same shape measured: FA2 802.0 µs, cuDNN's wgmma kernel 426.3 µs (the fixtures)
    assert wgmma.unlock_x == pytest.approx(802.0 / 426.3) and "FlashAttention-3 or cuDNN" in wgmma.action
    assert "802.0 µs" in wgmma.expected and "426.3 µs" in wgmma.expected
    rules = {lv.rule for lv in a.next_levers}
    assert not rules & {"raise-occupancy-registers", "raise-occupancy-smem"}  # FA2 is not the user's to recompile
    assert a.ncu.bottleneck == "Latency Issue" and a.ncu.agrees


def test_warp_specialised_library_kernels_get_no_barrier_or_source_lever(fx: Path) -> None:
    for name in ("attention_cudnn.ncu-rep", "gemm_bf16.ncu-rep"):
        a = one(fx, name)
        assert a.record.warp_stalls is not None and next(iter(a.record.warp_stalls)) == "barrier"
        assert any("warp-specialised kernel, not a lever" in line for line in a.limiters)
        assert not {lv.family for lv in a.next_levers} & {"source", "compiler"}
        assert "balance-barriers" not in {lv.rule for lv in a.next_levers}


def test_divergent_fma_kernel_is_pipe_bound_with_no_memory_lever(fx: Path) -> None:
    a = one(fx, "divergent.ncu-rep")
    assert a.bound == "compute" and a.limiter.name == "FMA pipe"
    assert a.limiter.pct == pytest.approx(89.148 * 96.626 / 100, abs=0.01)  # busy while active x SM active: 86 %
    assert a.ncu.bottleneck == "High Throughput" and a.ncu.agrees
    assert not {lv.rule for lv in a.next_levers} & {"fuse-away", "bytes-in-flight", "quantise-operands",
                                                    "hide-memory-latency"}
    assert a.next_levers[0].unlock_x == pytest.approx(100 / a.record.simt_efficiency_pct)  # type: ignore[operator]


def test_softmax_with_exactly_half_occupancy_gets_a_lever(fx: Path) -> None:
    a = one(fx, "softmax.ncu-rep.gz")
    assert a.record.theoretical_occupancy_pct == 50.0
    assert any(line.startswith("occupancy limited by registers (37/thread): theoretical 50 %") for line in a.limiters)
    assert "near the 60 % line" in a.verdict  # issue slots 61.7 %: both sides said
    lever = a.next_levers[0]
    # streaming its bytes once would be 4.85x, but a replacement still issues softmax's instructions:
    # the issue slots at 61.7 % bound it
    assert lever.rule == "stream-once" and lever.unlock_x == pytest.approx(100 / a.limiter.pct)  # type: ignore[operator]
    assert "(4.6x its floor), but with issue slots 62 % busy doing work a replacement still issues: up to 1.6x" \
        in lever.expected
    # its 251 MB: 52.2 µs at the HBM roof plus 3.4 µs of launch and ramp measured for as many bytes
    assert "251 MB take at least 55.6 µs (at the HBM roof, plus the launch and ramp" in lever.expected


def test_random_numbers_are_made_where_they_are_used(fx: Path) -> None:
    """randn at the issue limit (73 %): a replacement still runs Philox and Box-Muller, so a faster
    generator gains at most 1/0.73 = 1.37x; the lever is generating inside the consumer."""
    a = one(fx, "randn.ncu-rep.gz")
    first = a.next_levers[0]
    assert first.rule == "generate-in-consumer" and "at most 1.37x" in first.expected
    assert all(lv.unlock_x is None or lv.unlock_x <= 100 / a.limiter.pct for lv in a.next_levers)  # type: ignore[operator]


def test_tiny_kernel_is_launch_bound(fx: Path) -> None:
    a = one(fx, "tiny.ncu-rep.gz")
    assert a.record.duration_ns == 2208 and a.limiter.kind == "launch"
    assert a.verdict.startswith("latency-bound: launch overhead (2.21 µs")
    assert a.ncu.bottleneck == "Small Grid" and a.ncu.agrees


def test_no_quantise_lever_without_tensor_operands(fx: Path) -> None:
    decode, stream = one(fx, "decode_gemm.ncu-rep"), one(fx, "nobranch.ncu-rep")
    assert "quantise-operands" in {lv.rule for lv in decode.next_levers}
    assert stream.bound == "memory" and "quantise-operands" not in {lv.rule for lv in stream.next_levers}
    assert stream.record.branch_divergence_pct is None
    assert "fix-divergence" not in {lv.rule for lv in stream.next_levers}


def test_l2_is_judged_on_its_data_paths(fx: Path) -> None:
    """lts__throughput is L2's busiest sub-unit, not its bandwidth: the fp8 GEMM reads 72.5 % there while
    its tag and data stages moved sectors at 45.8 % and 51.4 % of peak; with no roof at 60 % it is
    latency-bound (ncu's Small Grid), not memory-bound."""
    stream = one(fx, "nobranch.ncu-rep")  # L2 busiest unit 78 % but a stream: 1.7x the DRAM bytes
    assert stream.limiter.kind == "hbm" and stream.record.l2_throughput_pct > stream.limiter.pct  # type: ignore[operator]
    fp8 = one(fx, "fp8_gemm.ncu-rep")
    assert fp8.record.l2_throughput_pct == pytest.approx(72.46, abs=0.01)
    assert fp8.record.l2_sectors_pct == pytest.approx(51.45, abs=0.01)
    assert (fp8.limiter.kind, fp8.runner_up and fp8.runner_up.kind) == ("latency", "l2")


def test_partial_flop_classes_verdict_stands_flagged(fx: Path) -> None:
    a = one(fx, "g_rmin.ncu-rep")
    assert a.limiter.pct_datasheet == pytest.approx(81.77, abs=0.01) and a.limiter.clock_hz is None
    assert "FLOP not collected for tensor_int8, tensor_fp64: the verdict stands" in a.verdict


def test_ncu_verdicts_beside_ours(fx: Path) -> None:
    names = [c[0] for c in CASES if c[0] not in ("gemm_basic.ncu-rep", "g_rmin.ncu-rep")]
    compared = {n: one(fx, n).ncu for n in names}
    assert {n for n, v in compared.items() if not v.agrees} == set()
    fp8 = compared["fp8_gemm.ncu-rep"]
    assert fp8.bottleneck == "Small Grid" and "LaunchConfiguration: Small Grid" in fp8.rules
    basic = one(fx, "gemm_basic.ncu-rep").ncu  # provisional, compared too: its busiest unit against ncu's title
    assert basic.bottleneck == "High Throughput" and basic.agrees is True
    assert one(fx, "g_rmin.ncu-rep").ncu.bottleneck is None


def test_blackwell_fp4_work_is_held_to_the_fp4_peak() -> None:
    """No Blackwell capture exists here: a launch holding gb100's counter names (docs/hopper-measurements.md §1-2)."""
    ops = C.TENSOR_OPS
    metrics = {C.COMPUTE_CAPABILITY: 10.0, **dict.fromkeys(ops.values(), 0.0), ops["fp4_dst_fp32"]: 1.5e13,
               C.TENSOR_TC_INST: 1e6, C.DURATION: 2e6, C.DRAM_READ: 1e9, C.DRAM_WRITE: 0.0}
    a = assess(derive(RawKernel("synthetic", 0, "k", "k", "NVIDIA B200", None, None, metrics)),
               load_ceilings().pick("NVIDIA B200"))
    assert a.compute_ceiling_key == "b200.compute.fp4" and a.compute_ceiling_tflops == 9000
    assert a.limiter.key == "b200.compute.fp4@tcgen05" and a.limiter.pct == pytest.approx(100 * 7_500 / 9_000)
    assert a.limiter.clock_hz is None and "its clock is not sourced" in a.limiter.reading  # said, not guessed


def test_near_a_line_both_sides_are_said() -> None:
    def roof(kind: LimiterKind, pct: float | None) -> Limiter:
        return Limiter(kind, kind, kind, pct, None, None, "")

    assert boundary(roof("tensor", 61.0), None).startswith("near the 60 % line: tensor 61.0 % names the limiter")
    line = boundary(roof("hbm", 79.0), roof("tensor", 76.0))
    assert "near the 80 % line: 79.0 % reads near the roof" in line and "balanced: hbm 79 % vs tensor 76 %" in line
    assert boundary(roof("tensor", 70.0), roof("issue", 20.0)) == ""
    assert "l2 57.0 % is just under it, so latency is named" in boundary(roof("latency", None), roof("l2", 57.0))



@pytest.mark.parametrize(("full", "owner", "family"), [
    # cuBLAS's CUTLASS kernels, as PyTorch runs them on Ampere (the kernel is a cutlass:: template)
    ("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_32x6_tn_align8>(T1::Params)",
     "library", "CUTLASS in cuBLAS"),
    # vLLM's own CUTLASS GEMM: a template vLLM instantiates, its tile configuration in reach
    ("void cutlass::device_kernel<vllm::cutlass_3x_gemm<cutlass::float_e4m3_t, cutlass::bfloat16_t, "
     "vllm::c3x::ScaledEpilogue, cute::tuple<cute::C<128>, cute::C<128>, cute::C<128>>>::GemmKernel>"
     "(T1::Params)", "open", "vLLM"),
    ("void marlin::Marlin<(int)256, (int)1, (int)8, (int)8, (int)4, (int)8>(const int4 *, const int4 *, int4 *)",
     "open", "Marlin (vLLM)"),
    ("void vllm::rms_norm_kernel<c10::BFloat16>(c10::BFloat16 *, const c10::BFloat16 *, const c10::BFloat16 *, "
     "float, int, int)", "open", "vLLM"),
    ("void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, int>>>(T1::Params)",
     "open", "CUTLASS"),
    ("void flash::FlashAttnFwdSm90<cutlass::bfloat16_t>(flash::Params)", "open", "FlashAttention-3 (vLLM)"),
    ("void my_kernel(float *)", "user", "your CUDA"),
    ("mm_kernel", "user", "your Triton"),  # no line info: a plain symbol, as Triton emits
])
def test_owner_from_the_full_name(fx: Path, full: str, owner: str, family: str) -> None:
    """Who owns a kernel decides its levers: read from the full name, where vLLM and CUTLASS put it."""
    a = one(fx, "divergent.ncu-rep")
    rec = replace(a.record, name=short_name(full), name_full=full, code_file=None)  # names alone
    assert (classify(rec).kind, classify(rec).family) == (owner, family)
