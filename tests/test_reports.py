"""Roofline plot, HTML report, kernel_internals, join and diff on the committed real fixtures."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

import kernelscope
from kernelscope.cli import main
from kernelscope.report import join, roofline_data
from kernelscope.report.internals import merge
from kernelscope.report.kernels import ranked
from kernelscope.report.table import render_markdown

MIXED = ("bundle_attn_causal", "gemm_basic.ncu-rep", "decode_gemm.ncu-rep", "divergent.ncu-rep")
FLASH = ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<(int)128, (int)128, (int)64, (int)4, (bool)0, "
         "(bool)0, cutlass::bfloat16_t, Flash_kernel_traits<(int)128, (int)128, (int)64, (int)4, "
         "cutlass::bfloat16_t>>, (bool)0, (bool)1, (bool)0, (bool)0, (bool)1, (bool)1, (bool)0, (bool)0>"
         "(pytorch_flash::Flash_fwd_params)")
MANY = Path(__file__).parent.parent / "bench" / "data" / "many.ncu-rep.gz"  # clamp, mul and add through one template
DECODE, FP8 = "nvjet_sm90_tst_64x8_64x16_2x1_v_bz_NNT", "nvjet_sm90_qqtst_128x64_128x8_1x2_h_bz_algo2_TNT"


def inputs(fx: Path) -> list[str]:
    return [str(fx / n) for n in MIXED]


def test_roofline_geometry_and_hollow_unmeasured(fx: Path) -> None:
    items, table = kernelscope.analyze(inputs(fx))
    data = roofline_data.build(ranked(items), table)
    # each roof a kernel is held to: its precision, its tensor path (FA2: mma.sync), lowest first
    assert [r.key for r in data.roofs] == ["h200-sxm.compute.fp32", "h200-sxm.compute.bf16@mma.sync",
                                           "h200-sxm.compute.bf16@wgmma", "h200-sxm.compute.bf16"]
    assert [p.rank for p in data.points] == [1, 2, 3, 4]  # the table's ranks: most time first
    assert data.memory_key == "h200-sxm.memory.hbm"
    hollow = [p for p in data.points if not p.measured]
    assert len(hollow) == 1 and "AI unmeasured" in hollow[0].details["placed by"]
    assert hollow[0].roof == "h200-sxm.compute.bf16"  # held to (and linked to) its family's roof
    assert hollow[0].ai == pytest.approx(989 / 4.8)  # at its family's ridge...
    assert hollow[0].tflops == pytest.approx(989 * 0.9332, rel=1e-3)  # ...by SM busy, never as measured
    decode = next(p for p in data.points if p.name.startswith("nvjet_sm90_tst_64x8"))
    assert decode.measured and decode.ai == pytest.approx(1_073_741_824 / 136_788_736)
    assert decode.roof == "h200-sxm.compute.bf16@wgmma" and decode.bound == "memory"


def test_a_measured_zero_flop_kernel_is_listed_not_placed(fx: Path) -> None:
    """A copy kernel (FLOP counters collected, all zero) has AI 0: not a point on log axes, and not
    a hollow 'AI unmeasured' point either."""
    items, table = kernelscope.analyze([str(fx / "decode_gemm.ncu-rep")])
    rec = items[0].record
    copy = replace(items[0], record=replace(rec, flops={"tensor_bf16": 0.0}, arithmetic_intensity=0.0,
                                            achieved_tflops=0.0))
    data = roofline_data.build(ranked([copy]), table)
    assert data.points == () and data.no_flops == (1,) and data.unplaced == ()


@pytest.mark.parametrize("ext", ["png", "svg", "pdf"])
def test_roofline_files(fx: Path, tmp_path: Path, ext: str) -> None:
    out = tmp_path / f"roofline.{ext}"
    assert main(["roofline", *inputs(fx), "--out", str(out)]) == 0
    data = out.read_bytes()
    if ext == "png":
        assert data.startswith(b"\x89PNG") and len(data) > 20_000
    elif ext == "pdf":
        assert data.startswith(b"%PDF-") and len(data) > 10_000
    else:
        text = data.decode()
        assert re.findall(r'<g id="label-(\d+)"', text) == ["1", "2", "3", "4"]  # every kernel numbered
        # one collection per series (verdict x hollow x size class), not one artist per kernel
        # gemm_basic is provisional compute (hollow: no intensity), the GEMM compute, the fp8 GEMM latency
        assert sorted(re.findall(r'<g id="series-([a-z]+)-\d+"', text)) == ["compute", "compute", "latency",
                                                                            "memory"]
        assert "bf16 (path unknown) roof 989 TFLOP/s, ridge 206 FLOP/B" in text and "AI unmeasured" in text


def test_html_is_self_contained_with_context(fx: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    assert main(["report", *inputs(fx), "--out", str(out)]) == 0
    text = out.read_text()
    assert not re.search(r'(src|href)\s*=\s*["\']?(https?:)?//', text) and "url(http" not in text
    assert len(re.findall(r"<tr id='k\d+'>", text)) == 4
    assert "<td>model</td><td class='unknown'>unknown</td>" in text  # unknown said, not guessed
    assert "NVIDIA H200 (driver 580.159.04, CUDA 13.0)" in text and "ncu 2025.3.1.0, set roofline" in text
    assert "Next levers" in text and "counted flops are 1.07x" in text


def test_kernel_internals_merge_keeps_other_keys_byte_identical(fx: Path, tmp_path: Path) -> None:
    bundle = tmp_path / "b"
    shutil.copytree(fx / "bundle_attn_causal", bundle)
    original = ('{\n  "schema":   "inference_perfbench_v1",\n  "results": {"tok_s": 1234.50, "p99_ms": [1,2, 3]},\n'
                '  "kernel_internals": {"old": true},\n  "notes": "keep \\u00e9 exactly"\n}\n')
    (bundle / "inference_perfbench_v1.json").write_text(original)
    assert main(["bundle", "kernel-internals", "--bundle", str(bundle)]) == 0  # the earlier spelling, still taken
    text = (bundle / "inference_perfbench_v1.json").read_text()
    for kept in ('"schema":   "inference_perfbench_v1"', '"results": {"tok_s": 1234.50, "p99_ms": [1,2, 3]}',
                 '"notes": "keep \\u00e9 exactly"'):
        assert kept in text
    doc = json.loads(text)
    k = doc["kernel_internals"]["per_kernel"][FLASH]
    assert k["regs_per_thread"] == 255 and k["bound"] == "latency"
    assert k["ceiling_key"] == "h200-sxm.compute.bf16@mma.sync"  # the nearest roof: mma.sync's
    assert k["block_limit_factor"] == "registers+shared_mem" and doc["kernel_internals"]["method"]
    assert set(doc) == {"schema", "results", "kernel_internals", "notes"}


def test_kernel_internals_creates_file_and_appends_key(tmp_path: Path) -> None:
    assert json.loads(merge(None, {"a": 1}, tmp_path / "x")) == {"kernel_internals": {"a": 1}}
    assert merge('{"x": 1}', {"a": 1}, tmp_path / "x").startswith('{"x": 1,\n  "kernel_internals": {')
    assert json.loads(merge("{}", {"a": 1}, tmp_path / "x")) == {"kernel_internals": {"a": 1}}


def test_join_names_across_mangled_demangled_templated(fx: Path, tmp_path: Path) -> None:
    assert join.base("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEEEEviT0_") \
        == "vectorized_elementwise_kernel"
    assert join.base("void at::native::(anonymous namespace)::cunn_SoftMaxForwardReg<float, float, float>(T3 *)") \
        == "cunn_SoftMaxForwardReg"
    assert join.base("_Z13divergent_fmaPfi") == "divergent_fma"
    nsys = tmp_path / "kern_sum.csv"
    nsys.write_text('"Time (%)","Total Time (ns)","Instances","Avg (ns)","Med (ns)","Min (ns)","Max (ns)",'
                    '"StdDev (ns)","Name"\n'
                    '61.2,"1,234,567",10,123456.7,1,1,1,0,"void at::native::(anonymous namespace)::'
                    'cunn_SoftMaxForwardReg<c10::BFloat16, float, c10::BFloat16>(T3 *, const T1 *, T5)"\n'
                    '20.0,500000,5,100000,1,1,1,0,"divergent_fma(float *, int)"\n')
    shares = tmp_path / "shares.csv"
    shares.write_text("name,share %\n_Z13divergent_fmaPfi,12.5\ncunn_SoftMaxForwardReg,40.0\n")
    items, _ = kernelscope.analyze([str(fx / "softmax.ncu-rep.gz"), str(fx / "divergent.ncu-rep")])
    joined = join.join(items, join.read_nsys(nsys), join.read_shares(shares))
    assert [(r.name, r.samples_pct, r.nsys_total_ms) for r in joined.rows] == [
        ("cunn_SoftMaxForwardReg", 40.0, pytest.approx(1.234567)), ("divergent_fma", 12.5, pytest.approx(0.5))]
    assert joined.unmatched == []  # every profile row found its kernel
    md = render_markdown(join.table(joined))
    assert md.startswith("**2 kernel(s), ranked by the nsys totals (every launch of the run)**\n\n| \\# | kernel | "
                         "source | time µs | time % | samples % | nsys ms | nsys % | bound | roof | roof % | "
                         "SoL comp % |")
    # the frontier is weighted by the whole run's nsys totals, and says so
    assert {(f.kernel, round(f.time_share_pct or 0)) for _, f in joined.frontier} == {
        ("cunn_SoftMaxForwardReg", 71), ("divergent_fma", 29)}
    assert {f.share_basis for _, f in joined.frontier} == {"nsys totals"}


def test_join_tells_instantiations_of_one_template_apart(fx: Path, tmp_path: Path) -> None:
    """bench/data/many holds three instantiations of vectorized_elementwise_kernel. nsys names two
    in full (c++filt spelling: `4`, `2ul`, other spaces); a base-name-only row is not split."""
    items, _ = kernelscope.analyze(str(fx.parent.parent / "bench" / "data" / "many.ncu-rep.gz"))
    tail = "std::array<char*, 2ul> >(int, T2, T3)"
    nsys = tmp_path / "kern_sum.csv"
    nsys.write_text(
        '"Total Time (ns)","Name"\n'
        f'"9000","void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, float, float, '
        f'at::native::binary_internal::MulFunctor<float> >, {tail}"\n'
        f'"1000","void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctorOnSelf_add<float>, '
        f'{tail}"\n')
    joined = join.join(items, join.read_nsys(nsys), {})
    ms = {op: r.nsys_total_ms for r in joined.rows for op in ("MulFunctor", "OnSelf_add", "clamp") if op in r.kernel}
    assert ms == {"MulFunctor": pytest.approx(0.009), "OnSelf_add": pytest.approx(0.001), "clamp": None}
    top = joined.frontier[0][1]
    assert "MulFunctor" in top.kernel and top.time_share_pct == pytest.approx(90.0)
    base_only = tmp_path / "base.csv"
    base_only.write_text('"Total Time (ns)","Name"\n"5000","vectorized_elementwise_kernel"\n')
    joined = join.join(items, join.read_nsys(base_only), {})
    assert all(r.nsys_total_ms is None for r in joined.rows)
    assert len(joined.notes) == 3 and "3 captured kernels share the base name" in joined.notes[0]
    # the row that could not be split is listed, with all of the profile's time, not dropped
    assert [(u.kernel, u.nsys_total_ms, u.nsys_pct) for u in joined.unmatched] == [
        ("vectorized_elementwise_kernel", pytest.approx(0.005), 100.0)]




def test_join_one_kernel_in_two_reports_still_matches_by_base_name(fx: Path, tmp_path: Path) -> None:
    """The same softmax captured twice is one kernel under its base name, not two to split between."""
    shutil.copy(fx / "softmax.ncu-rep.gz", tmp_path / "again.ncu-rep.gz")
    items, _ = kernelscope.analyze([str(fx / "softmax.ncu-rep.gz"), str(tmp_path / "again.ncu-rep.gz")])
    shares = tmp_path / "shares.csv"
    shares.write_text("name,share %\ncunn_SoftMaxForwardReg,40.0\n")
    joined = join.join(items, {}, join.read_shares(shares))
    assert [r.samples_pct for r in joined.rows] == [40.0, 40.0] and joined.notes == ()


def test_kernel_internals_keeps_every_instantiation(tmp_path: Path) -> None:
    """bench/data/many: clamp, mul and add through vectorized_elementwise_kernel are three kernels,
    each keyed by its full name with its own figures (once one key, holding one launch's)."""
    bundle = tmp_path / "many"
    bundle.mkdir()
    shutil.copy(MANY, bundle)
    assert main(["bundle", "kernel-internals", str(bundle)]) == 0
    per_kernel = json.loads((bundle / "inference_perfbench_v1.json").read_text())["kernel_internals"]["per_kernel"]
    elementwise = {op: k for k in per_kernel for op in ("clamp", "MulFunctor", "OnSelf_add") if op in k}
    assert len(per_kernel) == 4 and len(elementwise) == 3
    assert all(k.startswith("void at::native::vectorized_elementwise_kernel<(int)4, at::native::")
               for k in elementwise.values())
    got = {op: (round(per_kernel[k]["achieved_occupancy_pct"], 2), round(per_kernel[k]["arithmetic_intensity"], 4),
                round(per_kernel[k]["pct_sol"], 2)) for op, k in elementwise.items()}
    assert got == {"clamp": (31.05, 0.0, 19.41), "MulFunctor": (30.53, 0.2497, 19.81),
                   "OnSelf_add": (32.52, 0.4994, 19.81)}


def profiles(tmp_path: Path) -> tuple[Path, Path]:
    """A sampling profile naming both GEMMs and a flash_fwd_kernel ncu never captured, and nsys
    totals (its own spelling) of the same three."""
    shares = tmp_path / "shares.csv"
    shares.write_text(f"name,share %\n{FP8},30.0\n{DECODE},12.0\nflash_fwd_kernel,4.5\n")
    nsys = tmp_path / "kern_sum.csv"
    nsys.write_text('"Time (%)","Total Time (ns)","Instances","Avg (ns)","Med (ns)","Min (ns)","Max (ns)",'
                    '"StdDev (ns)","Name"\n'
                    f'50.0,"3,000,000",100,1,1,1,1,0,"{FP8}"\n25.0,"1,000,000",100,1,1,1,1,0,"{DECODE}"\n'
                    '25.0,"500,000",10,1,1,1,1,0,"void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, '
                    'false, false, cutlass::bfloat16_t>, false, true>(Flash_fwd_params)"\n')
    return shares, nsys


def test_join_ranks_by_the_profile_and_lists_what_matches_nothing(fx: Path, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    shares, nsys = profiles(tmp_path)
    gemms = [str(fx / "decode_gemm.ncu-rep"), str(fx / "fp8_gemm.ncu-rep")]  # by ncu time: decode first
    assert main(["join", *gemms, "--zymtrace", str(shares), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ranked_by"] == "sample shares"
    assert [(k["rank"], k["kernel"], k["samples_pct"]) for k in doc["kernels"]] == [(1, FP8, 30.0), (2, DECODE, 12.0)]
    assert doc["unmatched"] == [{"kernel": "flash_fwd_kernel", "samples_pct": 4.5, "nsys_total_ms": None,
                                 "nsys_pct": None}]
    assert {(f["rank"], f["kernel"]) for f in doc["frontier"]} == {(1, FP8), (2, DECODE)}  # the table's ranks
    # with nsys too, nsys ranks; each profile's unmatched row keeps its own figure
    assert main(["join", *gemms, "--zymtrace", str(shares), "--nsys", str(nsys)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "2 kernel(s), ranked by the nsys totals (every launch of the run)"
    assert lines[1].split()[:10] == ["#", "kernel", "source", "time", "µs", "time", "%", "samples", "%", "nsys"]
    assert lines[3].split()[:9] == ["1", FP8, "fp8_gemm", "19.4", "35.4", "30.0", "3.000", "66.7", "latency"]
    assert lines[4].split()[:9] == ["2", DECODE, "decode_gemm", "35.3", "64.6", "12.0", "1.000", "22.2", "memory"]
    assert ("Not in the ncu capture: 2 profile row(s) that match no captured kernel (11.1 % of nsys time, 4.5 % of "
            "samples)") in out
    assert [line.split()[-3:] for line in lines if line.startswith(("void flash_fwd", "flash_fwd"))] == [
        ["—", "0.500", "11.1"], ["4.5", "—", "—"]]


def test_join_table_has_the_first_lever_and_the_notes(fx: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    base_only = tmp_path / "base.csv"
    base_only.write_text('"Total Time (ns)","Name"\n"5000","vectorized_elementwise_kernel"\n')
    assert main(["join", str(MANY), "--nsys", str(base_only), "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    head, *rows = [line for line in out.splitlines() if line.startswith("| ") and "---" not in line][:5]
    assert head.endswith("| occ % | next lever |")
    assert [row.rsplit("|", 2)[1].strip() for row in rows] == ["cuda-graph"] * 3 + ["recapture-stalls"]
    notes = [line for line in out.splitlines() if "share the base name" in line]
    assert len(notes) == 3  # markdown-escaped, as every note is
    assert notes[0].startswith("\\#1 vectorized\\_elementwise\\_kernel&lt;…at::native::&lt;unnamed>::")
    assert "| `vectorized_elementwise_kernel` | 0.005 | 100.0 |" in out  # not split, and not dropped either


def test_join_json_and_csv_name_each_kernel_in_full(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["join", str(MANY), "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["source"] for r in rows] == ["many"] * 4  # one input: still a source column
    clamp = rows[0]
    assert clamp["kernel"].startswith("void at::native::vectorized_elementwise_kernel<(int)4, at::native::<unnamed>::"
                                      "launch_clamp_scalar(") and clamp["kernel"].endswith(">>(int, T2, T3)")
    assert clamp["name"].startswith("vectorized_elementwise_kernel<…at::native::<unnamed>::launch_clamp_scalar(")
    assert (clamp["launches"], clamp["duration_ns"], clamp["next_lever"], clamp["matched"]) == (
        "99", "424576.0", "cuda-graph", "True")
    assert main(["join", str(MANY), "--format", "json"]) == 0
    kernels = json.loads(capsys.readouterr().out)["kernels"]
    assert [k["kernel"] for k in kernels] == [r["kernel"] for r in rows]
    assert len({k["kernel"] for k in kernels}) == 4 and len({k["name"] for k in kernels}) == 4


def test_join_takes_analyzes_selection_and_ceilings(fx: Path, capsys: pytest.CaptureFixture[str]) -> None:
    measured = str(fx / "measured-ceilings-h200.yaml")
    assert main(["join", str(fx / "decode_gemm.ncu-rep"), "--ncu", str(fx / "fp8_gemm.ncu-rep"), "--kernel",
                 "regex:qqtst", "--ceilings", measured, "--achievable", measured, "--format", "json"]) == 0
    (k,) = json.loads(capsys.readouterr().out)["kernels"]
    assert (k["kernel"], k["bound"], k["ceiling_key"]) == (FP8, "compute", "h200-measured.compute.fp8@wgmma")
    assert k["pct_sol"] == pytest.approx(69.599, abs=1e-3)
    assert k["pct_of_achievable"]["pct_compute"] == pytest.approx(69.599, abs=1e-3)
    assert main(["join", str(fx / "fp8_gemm.ncu-rep"), "--achievable", measured, "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert "| ach comp % | ach mem % | next lever |" in md and "| 14 | 70 | 47 | another-algorithm |" in md


def test_html_names_wrap_at_their_boundaries_and_stay_escaped() -> None:
    from kernelscope.report.html import name_html

    wrapped = "at::<wbr>native::<wbr>Fn&lt;<wbr>float,<wbr> 4&gt;_<wbr>k/<wbr>x"
    assert name_html("at::native::Fn<float, 4>_k/x") == wrapped
    assert name_html("<img src=x onerror=alert(1)>") == "&lt;<wbr>img src=x onerror=alert(1)&gt;"
    assert name_html("a_") == "a_"  # no break opportunity after the last character


def test_a_kernel_whose_launches_have_other_limiters_says_so_under_the_table(attach_dir: Path) -> None:
    """vLLM's fused MoE runs two shapes a layer (gate-up 17.3 µs at the HBM roof, down 10.0 µs at the
    launch-and-ramp floor): its row stands for the first, and a line names the other with its share."""
    from kernelscope.report.kernels import bound_notes, ranked

    items, _ = kernelscope.analyze([attach_dir / "moe-replayed"])
    rows = ranked(items)
    moe = next(r for r in rows if r.name == "fused_moe_kernel")
    assert moe.lead.limiter.kind == "hbm" and len(moe.group.launches) == 2
    assert f"launches held by another limiter, share of the kernel's time: #{moe.rank} (launch and ramp 37 %): a row " \
           "shows the launch whose limiter holds most of its time; --per-launch shows each" in bound_notes(rows)
