"""Levers an expert signs (issue 21): each unlock sized from the figure that binds, levers the owner
can pull, findings the report holds shown with their lever, and one ranking by share of the run."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

import kernelscope
from kernelscope.analysis.frontier import frontier
from kernelscope.analysis.levers.gemm import MEASURED_SAME_SHAPE
from kernelscope.analysis.rules import RAMP_FLOOR_NS, ramp_floor_ns
from kernelscope.analysis.verdict import assess
from kernelscope.ceilings import load as load_ceilings
from kernelscope.model import Assessment


def by_name(path: Path) -> dict[str, Assessment]:
    items, _ = kernelscope.analyze(str(path))
    return {a.record.name: a for a in items}


@pytest.fixture(scope="module")
def full(sets_dir: Path) -> dict[str, Assessment]:
    """--set full of the torch workload (tests/fixtures/README.md, "Capture sets")."""
    return by_name(sets_dir / "full-torch.ncu-rep")


def rules_of(a: Assessment) -> list[str]:
    return [lv.rule for lv in a.next_levers]


def test_user_triton_gemm_gets_triton_levers_and_the_library_call(full: dict[str, Assessment],
                                                                  sets_dir: Path) -> None:
    """mm_kernel: the report's line info names a .py file, so it is the user's Triton; its levers are
    Triton's knobs and torch.matmul (cuBLAS 339.3 µs against its 413.8 µs at this shape), not CUDA's."""
    mm = full["mm_kernel"]
    assert mm.record.code_file is not None and mm.record.code_file.endswith("workloads.py")
    assert (mm.provenance.kind, mm.provenance.family) == ("user", "your Triton")
    assert rules_of(mm)[:2] == ["triton-retune", "library-gemm"]
    retune, library = mm.next_levers[:2]
    assert all(k in retune.action for k in ("num_warps", "num_stages", "tl.make_tensor_descriptor", "persistent",
                                            "warp specialisation"))
    assert "torch.matmul" in library.action and library.unlock_x == pytest.approx(413.8 / 339.3)
    assert MEASURED_SAME_SHAPE["triton-gemm"][0] == pytest.approx(413.8 / 339.3)
    assert not any("__syncthreads" in lv.action or "__launch_bounds__" in lv.action for lv in mm.next_levers)
    # without line info (--set basic) the plain symbol, as Triton emits, still names it
    basic = by_name(sets_dir / "basic-torch.ncu-rep")["mm_kernel"]
    assert basic.record.code_file is None and basic.provenance.family == "your Triton"
    assert "unmangled" in basic.provenance.evidence


def test_findings_in_the_report_are_shown_with_ncus_estimate(full: dict[str, Assessment]) -> None:
    """FA2 at 255 registers spills; ncu's SharedMemoryConflicts rule fires with its own estimate. FA2 is
    FlashAttention's code: the finding says so, and no source lever is offered for it."""
    fa2 = full["flash_fwd_kernel"]
    spill = fa2.record.register_spill_pct
    assert spill is not None and 1.0 < spill < 5.0 and fa2.record.registers_per_thread == 255
    lines = fa2.limiters
    assert any(line.startswith(f"register spills: {spill:.1f} % of instructions") and "not yours" in line
               for line in lines)
    conflicts = next(r for r in fa2.record.ncu_rules if r.rule == "SharedMemoryConflicts")
    assert conflicts.speedup_pct is not None
    assert any(line.startswith("ncu SharedMemoryConflicts") and f"{conflicts.speedup_pct:.1f} %" in line
               for line in lines)
    assert not {"fix-spills", "fix-bank-conflicts"} & set(rules_of(fa2))
    assert rules_of(fa2)[0] == "wgmma-kernel"


def test_long_scoreboard_at_the_hbm_roof_is_bandwidth(full: dict[str, Assessment]) -> None:
    decode = full["nvjet_sm90_tst_64x8_64x16_2x1_v_bz_NNT"]
    assert decode.limiter.kind == "hbm" and decode.limiter.pct is not None and decode.limiter.pct > 80
    stall = next(line for line in decode.limiters if line.startswith("dominant stall long_scoreboard"))
    assert "bandwidth limit" in stall and "latency not hidden" not in stall


def test_warp_specialised_gemm_shows_no_occupancy_limiter(full: dict[str, Assessment]) -> None:
    """One CTA per SM is the design of a warp-specialised cuBLAS GEMM at 93 % of its roof."""
    gemm = full["nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"]
    assert gemm.provenance.warp_specialised and gemm.limiter.kind == "tensor"
    assert not any(line.startswith("occupancy limited") for line in gemm.limiters)


def test_quantise_only_where_hbm_binds(fx: Path) -> None:
    """The decode GEMM at the HBM roof may store its weights in fp8; the same kernel moved to the L2
    roof with HBM at 19 % (its DRAM bytes cut to a quarter) may not: fewer HBM bytes buy nothing there."""
    (decode,), _ = kernelscope.analyze(str(fx / "decode_gemm.ncu-rep"))
    assert decode.limiter.kind == "hbm" and "quantise-operands" in rules_of(decode)
    r = decode.record
    assert r.dram_bytes and r.achieved_dram_tbps and r.dram_throughput_pct
    at_l2 = assess(replace(r, dram_bytes=r.dram_bytes * 0.24, achieved_dram_tbps=r.achieved_dram_tbps * 0.24,
                           dram_throughput_pct=r.dram_throughput_pct * 0.24, l2_sectors_pct=85.0),
                   load_ceilings().devices["h200-sxm"])
    assert at_l2.limiter.kind == "l2" and at_l2.runner_up is not None and at_l2.runner_up.pct < 20  # type: ignore[operator]
    assert "quantise-operands" not in rules_of(at_l2)


def test_a_wgmma_attention_kernel_is_not_sent_to_mma_sync_backends(fx: Path) -> None:
    """cuDNN's wgmma attention at 71 % of the wgmma roof: torch's FLASH and EFFICIENT backends run
    mma.sync (FA2 took 1.88x its time at this shape, attention_fa2.ncu-rep), so another algorithm means
    another wgmma kernel, outside SDPA."""
    (cudnn,), _ = kernelscope.analyze(str(fx / "attention_cudnn.ncu-rep"))
    assert cudnn.record.tensor_path == "wgmma" and cudnn.limiter.kind == "tensor"
    (lever,) = [lv.action for lv in cudnn.next_levers if lv.rule == "another-algorithm"]
    assert "outside SDPA: FlashAttention-3" in lever and "sdpa_kernel(" not in lever
    assert "at 71 % of the wgmma roof this kernel is past what they can reach" in lever


def test_a_kernel_with_no_time_ranks_below_one_with_a_fifth(fx: Path) -> None:
    """The tiny launch-bound kernel's cuda-graph (gain 3, cost 1) holding 0.03 % of the run ranks under
    every lever of the divergent kernel holding 20 %: its share bounds what it can gain."""
    items, _ = kernelscope.analyze([str(fx / n) for n in ("tiny.ncu-rep.gz", "divergent.ncu-rep", "nobranch.ncu-rep")])
    named = {a.record.name: a.record for a in items}
    tiny, divergent, stream = (named[n] for n in ("vectorized_elementwise_kernel", "divergent_fma", "axpy_nobranch"))
    weights = {(tiny.source, tiny.name_full): 0.03, (divergent.source, divergent.name_full): 20.0,
               (stream.source, stream.name_full): 79.97}
    rows = frontier(items, weights, "nsys totals")
    first_tiny = next(i for i, r in enumerate(rows) if r.kernel_full == tiny.name_full)
    assert rows[first_tiny].rule == "cuda-graph" and rows[first_tiny].time_share_pct == pytest.approx(0.03)
    assert max(i for i, r in enumerate(rows) if r.kernel_full == divergent.name_full) < first_tiny
    fix = next(r for r in rows if r.rule == "fix-divergence")  # SIMT efficiency 28 %: up to 3.5x
    assert fix.unlock_x == pytest.approx(3.519, abs=1e-3)
    assert fix.score == pytest.approx(100 * (1 - 1 / fix.unlock_x) * 0.20 / fix.cost)


def test_ramp_floor_is_the_lower_envelope_of_the_measured_ramp(fx: Path, sets_dir: Path) -> None:
    """rules.RAMP_FLOOR_NS is read off tests/fixtures/floor-raw.csv (read-only, copy and store kernels from
    64 KiB to 1 GiB and an empty kernel on the H200) and bench/data/many.ncu-rep.gz: each point a measured
    launch, no measured launch under the floor, the capture sets' in-place multiply (ramp.ncu-rep) too."""
    many = fx.parent.parent / "bench" / "data" / "many.ncu-rep.gz"
    items = [a for path in (fx / "floor-raw.csv", many, sets_dir / "ramp.ncu-rep")
             for a in kernelscope.analyze(str(path))[0]]
    measured = {(a.record.dram_bytes, a.record.duration_ns) for a in items}
    assert set(RAMP_FLOOR_NS["h200-sxm"]) <= measured
    for a in items:
        floor = ramp_floor_ns(a.record.dram_bytes, "h200-sxm")
        assert floor is None or (a.record.duration_ns or 0) >= 0.999 * floor, (a.record.name, a.record.dram_bytes)
    assert ramp_floor_ns(1e12, "h200-sxm") is None  # past the measured range


@pytest.mark.parametrize("full_name", [
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<(unsigned long)4096>)",
    "void vllm::cross_device_reduce_1stage<__nv_bfloat16, (int)2>(vllm::RankData *, vllm::RankSignals, "
    "vllm::Signal *, __nv_bfloat16 *, int, int)",
])
def test_a_collective_is_not_tuned_like_a_stream(fx: Path, full_name: str) -> None:
    """A communication kernel's time is its link's and its peers': the figures of a real streaming
    launch under a collective's name get the link caveat and the collective's levers only."""
    (a,), _ = kernelscope.analyze(str(fx / "nobranch.ncu-rep"))
    rec = replace(a.record, name=full_name.split("(")[0].split("<")[0].removeprefix("void "), name_full=full_name,
                  code_file=None)
    judged = assess(rec, load_ceilings().devices["h200-sxm"])
    assert any(line.startswith("communication kernel: the link it uses") for line in judged.limiters)
    assert rules_of(judged) == ["shrink-communication"]
    assert not {"fuse-away", "bf16-storage", "bytes-in-flight"} & set(rules_of(judged))
