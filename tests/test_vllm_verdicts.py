"""Verdicts an expert signs on what users bring (issue 28): real vLLM 0.26 kernels captured on the H200
under the sets users have (`--set detailed`, `--set basic`, `--set full`, the seed's roofline-min
`--metrics` list, `--graph-profiling graph`; tests/fixtures/vllm/README.md has each command)."""

from __future__ import annotations

from pathlib import Path

import pytest

import kernelscope
from kernelscope.analysis.rules import ramp_floor_ns
from kernelscope.ingest import report_manifest
from kernelscope.model import Assessment

VLLM = Path(__file__).parent / "fixtures" / "vllm"
NOT_FOR_A_VLLM_USER = ("Transformer Engine", "torch.compile(mode=", "__launch_bounds__", "cuDNN benchmark",
                       "launch it inside a CUDA graph")


def judged(name: str) -> list[Assessment]:
    return kernelscope.analyze(str(VLLM / f"{name}.ncu-rep.gz"))[0]


def by_name(items: list[Assessment], name: str) -> list[Assessment]:
    return [a for a in items if a.record.name == name]


def levers_text(a: Assessment) -> str:
    return " | ".join(f"{lv.action} {lv.expected}" for lv in a.next_levers)


@pytest.mark.parametrize("name", ["moe_detailed", "moe_roofline", "llama_rmin", "fp8_basic", "graph30"])
def test_vllm_is_recognised_from_the_report(name: str) -> None:
    """The capture ran `workload28.py`, no script named vllm: its own kernels say whose they are, and
    every lever speaks vLLM's switches, never another stack's."""
    manifest = report_manifest(VLLM / f"{name}.ncu-rep.gz")
    assert manifest is not None and manifest.engine_evidence is not None
    assert manifest.engine_evidence.startswith("vLLM's own kernels (")
    assert manifest.context["serving.engine"] == "vllm"
    for a in judged(name):
        assert "run under vLLM, recognised from vLLM's own kernels" in a.provenance.evidence or \
            a.record.workload != "kernel"
        said = levers_text(a)
        assert not any(words in said for words in NOT_FOR_A_VLLM_USER), (a.record.name, said)


def test_missing_tensor_counters_are_not_read_as_no_work() -> None:
    """The seed's roofline-min list counts SIMT FLOP, not tensor FLOP: a cuBLAS decode GEMM gets no FLOP
    total, no compute %SoL and no "use tensor cores", but its measured bytes place it at the HBM roof;
    dram__bytes.sum, the warps-active occupancy and the clock (cycles / duration) are read."""
    items = judged("llama_rmin")
    gemm = by_name(items, "nvjet_sm90_tst_128x8_64x12_2x1_v_bz_TNT")[0]
    rec = gemm.record
    assert rec.flops is not None and rec.flops_total is None and "flops_total" in rec.unmeasured
    assert gemm.pct_sol_compute is None and rec.arithmetic_intensity is None and rec.achieved_tflops is None
    assert rec.dram_bytes == 237_685_760 and rec.sources["dram_bytes"] == "dram__bytes.sum"
    assert rec.achieved_occupancy_pct == pytest.approx(14.4, abs=0.1)
    assert rec.sm_clock_hz == pytest.approx(1.85e9, rel=0.01)
    assert "gpc__cycles_elapsed.max" in rec.sources["sm_clock_hz"]
    assert (gemm.bound, gemm.provisional, gemm.limiter.kind) == ("memory", False, "hbm")
    assert "compute side unmeasured: tensor FLOP not collected" in gemm.verdict
    rules = [lv.rule for lv in gemm.next_levers]
    assert "batch-rows" in rules and "use-tensor-cores" not in rules and "fuse-away" not in rules
    assert any(line.startswith("not judged: tensor-core use") for line in gemm.limiters)
    # quantise-operands is offered on its bytes, so it is not among the levers said undecided
    assert "quantise-operands" in rules and not any("quantise-operands" in line for line in gemm.limiters)


def test_an_idle_tensor_pipe_bounds_the_tensor_flop_not_collected() -> None:
    """The detailed set counts no tensor FLOP; an RMS norm's tensor pipe was 0.2 % busy, so no tensor
    class can hold more than 0.2 % of its peak: its latency verdict stands (it said it may move)."""
    norm = by_name(judged("moe_detailed"), "triton_red_fused_fused_add_rms_norm_1")[0]
    assert norm.record.tensor_pipe_active_pct == pytest.approx(0.19, abs=0.01) and norm.bound == "latency"
    assert "(each at most 0.2 % of its peak): the verdict stands" in norm.verdict


def test_twin_launches_either_side_of_the_launch_line_say_it() -> None:
    """Two RMS norms of one step, 3.26 µs and 3.42 µs, fall either side of the 3.32 µs launch-overhead
    line: each verdict says how near it is, so neither reads as settled."""
    items = judged("moe_detailed")
    fast = by_name(items, "triton_red_fused_fused_add_rms_norm_moe_forward_0")[0]
    slow = by_name(items, "triton_red_fused_fused_add_rms_norm_1")[0]
    assert fast.limiter.kind == "launch" and slow.limiter.kind == "grid"
    assert "2 % under the 3.32 µs launch-overhead line: a twin launch a little slower" in fast.verdict
    assert "3 % over the 3.32 µs launch-overhead line: a twin launch a little faster" in slow.verdict


def test_moe_under_detailed_and_roofline_sets() -> None:
    """vLLM's fused MoE at 83 % of HBM: memory-bound under both sets (tensor FLOP uncounted by
    `--set detailed`, counted by kernelscope's list), levers a vLLM user pulls; the routing and norm
    kernels around it (no matmul) are never told to use tensor cores."""
    for name in ("moe_detailed", "moe_roofline"):
        items = judged(name)
        moe = by_name(items, "fused_moe_kernel")
        assert moe and all((a.bound, a.limiter.kind) == ("memory", "hbm") for a in moe)
        first = max(moe, key=lambda a: a.record.duration_ns or 0.0)
        assert first.limiter.pct == pytest.approx(83, abs=2)
        said = levers_text(first)
        assert "vLLM --quantization fp8" in said and "--max-num-seqs" in said
        assert "use a wgmma matmul" not in said and "Transformer Engine" not in said
        for a in items:
            if a.record.name != "fused_moe_kernel":
                assert "use-tensor-cores" not in [lv.rule for lv in a.next_levers], a.record.name
    detailed = by_name(judged("moe_detailed"), "fused_moe_kernel")[0]
    assert detailed.record.flops_total is None and "tensor work not counted: the tensor pipe" in detailed.verdict


def test_the_launch_and_ramp_floor_is_a_floor(fx: Path) -> None:
    """Recalibrated with read-only and copy kernels whose bytes reach DRAM (tests/fixtures/floor-raw.csv):
    no cuBLAS decode GEMM runs under it any more (o_proj: 12.06 us against a 14.99 us "floor" before),
    and no kernel faster than 0.95x the floor for its bytes is called launch-and-ramp bound."""
    floor = ramp_floor_ns(33_925_120, "h200-sxm")
    assert floor is not None and 11_500 < floor < 12_500
    for path in [*VLLM.glob("*.ncu-rep.gz"), fx / "decode_gemm.ncu-rep", fx / "vllm_offline.ncu-rep.gz"]:
        for a in kernelscope.analyze(str(path))[0]:
            r = a.record
            at = ramp_floor_ns(r.dram_bytes, "h200-sxm")
            if a.limiter.name == "launch and ramp":
                assert at is not None and r.duration_ns is not None and r.duration_ns >= 0.95 * at
            if r.name.startswith("nvjet") and at is not None and r.duration_ns is not None:
                assert r.duration_ns >= 0.95 * at, (path.name, r.name, r.duration_ns, at)


def test_split_k_reduce_is_judged_with_its_gemm() -> None:
    """cuBLASLt's splitKreduce_kernel is no GEMM: not told to use tensor cores or split-K; its lever is
    the GEMM's (more rows a step so the GEMM runs unsplit)."""
    reduce = by_name(judged("llama_rmin"), "splitKreduce_kernel")
    assert reduce
    for a in reduce:
        rules = [lv.rule for lv in a.next_levers]
        assert "use-tensor-cores" not in rules and "fuse-away" not in rules and "split-k-reduce" in rules
        lever = next(lv for lv in a.next_levers if lv.rule == "split-k-reduce")
        assert "the reduce of a split-K GEMM" in lever.action and "--max-num-seqs" in lever.action


def test_names_keep_the_kernel_and_graphs_are_graphs() -> None:
    """vLLM's CUTLASS fp8 GEMM is shown as cutlass_3x_gemm_sm90_fp8 (not GemmKernel); a
    `--graph-profiling graph` result is a graph: its time, no kernel verdict, no lever."""
    assert {a.record.name for a in judged("fp8_basic")} >= {"cutlass_3x_gemm_sm90_fp8"}
    graphs = [a for a in judged("graph30") if a.record.workload == "graph"]
    assert len(graphs) == 2
    for g in graphs:
        assert g.bound == "unmeasured" and g.next_levers == () and g.pct_sol_compute is None
        assert g.verdict.startswith("a whole CUDA graph, not one kernel") and g.provenance.family == "CUDA graph"
        assert g.record.duration_ns is not None and g.record.duration_ns > 700_000


def test_persistent_fa3_is_judged_on_tile_coverage(fx: Path) -> None:
    """FlashAttention-3 decode runs a persistent grid of one CTA a SM (132 on the H200): its SMs were
    active 28 % of the time, so tiles, not bytes, bound it; the unlock is bounded by that, and by the
    floor for its bytes, never sized from an HBM floor (issue 28: an unbounded "up to 4.76x")."""
    items = kernelscope.analyze(str(fx / "vllm_offline.ncu-rep.gz"))[0]
    fa3 = by_name(items, "FlashAttnFwdSm90")[0]
    assert fa3.record.grid == "(132, 1, 1)" and fa3.limiter.name == "tiles under the SMs"
    rules = [lv.rule for lv in fa3.next_levers]
    assert "stream-once" not in rules and rules[0] == "fill-the-grid"
    fill = fa3.next_levers[0]
    assert fill.unlock_x is not None and fill.unlock_x <= 100 / (fa3.record.sm_active_pct or 100) + 1e-9
    assert "--max-num-seqs" in fill.action and "cost per token" in fill.action


def test_long_context_decode_attention_is_memory_bound_with_kv_levers() -> None:
    """FA3 decode against ~3,000 cached tokens (`--set full`): memory-bound on HBM, its lever the KV
    cache's precision, never a GEMM's (batch rows, quantise weights)."""
    fa3 = by_name(judged("longctx_full"), "FlashAttnFwdSm90")
    assert fa3
    for a in fa3:
        assert (a.bound, a.limiter.kind) == ("memory", "hbm")
        rules = [lv.rule for lv in a.next_levers]
        assert rules[0] == "kv-cache-fp8" and "batch-rows" not in rules and "quantise-operands" not in rules
