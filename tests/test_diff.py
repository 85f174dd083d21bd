"""`diff` as a gate: kernels paired by name (join's rules), the figures that moved, `--fail-on`
thresholds in the table's units and their exit codes, the comparison on the figures both sides
measured, the context check on every input kind, --kernel/--ceilings/--achievable, goldens of every
format, and a closed pipe."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from kernelscope.cli import main
from kernelscope.report.gates import Change, parse
from kernelscope.report.join import pair as pair_names

Variant = Callable[..., Path]


@pytest.fixture()
def pair(fx: Path, tmp_path: Path, variant: Variant) -> Callable[[float], tuple[str, str]]:
    """A baseline and a candidate whose kernel is `factor` times slower (same FLOP and bytes)."""
    def make(factor: float) -> tuple[str, str]:
        base = variant(fx / "decode_gemm-raw.csv", tmp_path / "base.csv")
        cand = variant(fx / "decode_gemm-raw.csv", tmp_path / "cand.csv", duration_factor=factor)
        return str(base), str(cand)
    return make


def test_gate_exit_codes(pair: Callable[[float], tuple[str, str]], capsys: pytest.CaptureFixture[str]) -> None:
    base, cand = pair(1.10)
    assert main(["diff", base, cand]) == 0  # no gate: report only
    out = capsys.readouterr().out
    assert "moved" in out and "35.3 → 38.8 (+10.0%)" in out
    assert main(["diff", base, cand, "--fail-on", "duration_ns>+5%"]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "gate FAILED: 1 kernel(s) crossed duration_ns>+5%" in out
    assert main(["diff", base, cand, "--fail-on", "duration_ns>+15%"]) == 0
    assert "gate passed: duration_ns>+15%" in capsys.readouterr().out
    assert main(["diff", base, cand, "--fail-on", "achieved_tflops<-5%", "--fail-on", "duration_ns>+50%"]) == 1
    assert "achieved_tflops<-5%" in capsys.readouterr().out
    assert main(["diff", base, cand, "--fail-on", "duration_ns>+3000"]) == 1  # absolute: 3.5 µs slower > 3,000 ns
    assert "35.3 → 38.8 (+10.0%, +3,526.4 ns)" in capsys.readouterr().out  # the cell shows what the gate reads
    assert main(["diff", cand, base, "--fail-on", "duration_ns>+5%"]) == 0  # faster passes


def test_moved_figures_get_columns(pair: Callable[[float], tuple[str, str]],
                                   capsys: pytest.CaptureFixture[str]) -> None:
    base, cand = pair(1.10)
    assert main(["diff", base, cand, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (k,) = doc["kernels"]
    assert k["status"] == "moved" and k["launches"] == [1, 1]
    assert k["figures"]["duration_ns"]["change_pct"] == pytest.approx(10.0)
    assert k["figures"]["achieved_tflops"]["change_pct"] == pytest.approx(100 / 1.1 - 100)
    assert k["figures"]["registers_per_thread"]["change"] == 0
    head = next(line for line in _table(main, ["diff", base, cand], capsys) if line.startswith("#"))
    assert "TFLOP/s" in head and "regs" not in head  # a column for what moved, none for what did not


def _table(run: Callable[[list[str]], int], argv: list[str], capsys: pytest.CaptureFixture[str]) -> list[str]:
    run(argv)
    return capsys.readouterr().out.splitlines()


def test_markdown_for_a_pr_comment(pair: Callable[[float], tuple[str, str]], capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch, golden: Callable[[str, str], None]) -> None:
    base, cand = pair(1.10)
    monkeypatch.chdir(Path(base).parent)
    assert main(["diff", "base.csv", "cand.csv", "--fail-on", "duration_ns>+5%", "--format", "markdown"]) == 1
    golden("diff.md", capsys.readouterr().out)


def test_csv_is_long_form(pair: Callable[[float], tuple[str, str]], capsys: pytest.CaptureFixture[str]) -> None:
    base, cand = pair(1.10)
    assert main(["diff", base, cand, "--format", "csv", "--fail-on", "duration_ns>+5%"]) == 1
    header, *rows = capsys.readouterr().out.splitlines()
    assert header == ("kernel,candidate_kernel,matched_by,status,figure,unit,baseline,candidate,change,change_pct,"
                      "failed_gates,unevaluated_gates")
    duration = next(r for r in rows if ",duration_ns," in r).split(",")
    assert duration[2:6] == ["name", "FAIL", "duration_ns", "ns"] and float(duration[6]) == pytest.approx(35_264)
    assert duration[-2:] == ["duration_ns>+5%", ""]


def test_kernels_only_on_one_side(fx: Path, tmp_path: Path, variant: Variant,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    base = variant(fx / "decode_gemm-raw.csv", tmp_path / "a.csv")
    cand = variant(fx / "decode_gemm-raw.csv", tmp_path / "b.csv", name="fused_gemv_kernel")
    assert main(["diff", str(base), str(cand), "--fail-on", "duration_ns>+1%", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(k["kernel"], k["status"]) for k in doc["kernels"]] == [
        ("nvjet_sm90_tst_64x8_64x16_2x1_v_bz_NNT", "only in baseline"), ("fused_gemv_kernel", "only in candidate")]


def test_summed_time_gates_what_a_match_by_name_cannot(fx: Path, tmp_path: Path, variant: Variant,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A kernel added, or one swapped for a slower one of another name, fails the time gate."""
    raw = fx / "decode_gemm-raw.csv"
    base = variant(raw, tmp_path / "a.csv", name="gemm_{i}", copies=2)
    added = variant(raw, tmp_path / "b.csv", name="gemm_{i}", copies=3)
    assert main(["diff", str(base), str(added), "--fail-on", "duration_ns>+5%", "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert [k["status"] for k in doc["kernels"]] == ["same", "same", "only in candidate"]
    total = doc["summed_kernel_time_ns"]
    assert total["baseline"] == pytest.approx(2 * 35_264) and total["change_pct"] == pytest.approx(50.0)
    assert total["failed_gates"] == ["duration_ns>+5%"] and total["basis"] == "all launches"
    swapped = variant(raw, tmp_path / "c.csv", name="gemm_{i}_other_tile", copies=2, duration_factor=1.2)
    assert main(["diff", str(base), str(swapped), "--fail-on", "duration_ns>+5%"]) == 1
    out = capsys.readouterr().out
    assert "gate FAILED: summed kernel time crossed duration_ns>+5%" in out
    assert "summed kernel time µs (all launches) 70.5 → 84.6 (+20.0%)" in out
    faster = variant(raw, tmp_path / "d.csv", name="gemm_{i}_other_tile", copies=2, duration_factor=0.9)
    assert main(["diff", str(base), str(faster), "--fail-on", "duration_ns>+5%"]) == 0


def test_instantiations_of_one_template_match_themselves(capsys: pytest.CaptureFixture[str]) -> None:
    """Three vectorized_elementwise_kernel instantiations (clamp, mul, add) are three kernels each side."""
    many = str(Path(__file__).parents[1] / "bench" / "data" / "many.ncu-rep.gz")
    assert main(["diff", many, many, "--fail-on", "duration_ns>+1%", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(k["status"], k["launches"]) for k in doc["kernels"]] == [
        ("same", [99, 99]), ("same", [100, 100]), ("same", [100, 100]), ("same", [1, 1])]
    assert sum(k["kernel"].startswith("vectorized_elementwise_kernel<…at::native::") for k in doc["kernels"]) == 3


def test_launches_of_a_kernel_compare_by_mean(fx: Path, tmp_path: Path, variant: Variant,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    base = variant(fx / "decode_gemm-raw.csv", tmp_path / "a.csv", copies=3)
    cand = variant(fx / "decode_gemm-raw.csv", tmp_path / "b.csv", copies=5)
    assert main(["diff", str(base), str(cand), "--fail-on", "duration_ns>+1%"]) == 0
    out = capsys.readouterr().out
    assert "3 → 5" in out and "35.3 → 35.3 (+0.0%)" in out
    assert "summed kernel time µs (one launch of each kernel: launch counts differ) 35.3 → 35.3 (+0.0%)" in out


def test_context_check_on_bundles(fx: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A different device is refused; a different metric set is compared on the common figures."""
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(fx / "bundle_attn_causal", a)
    shutil.copytree(fx / "bundle_attn_causal", b)
    assert main(["diff", str(a), str(b), "--fail-on", "duration_ns>+1%"]) == 0
    assert "1 same; summed kernel time µs (all launches) 492.9 → 492.9 (+0.0%); gate passed" in capsys.readouterr().out
    manifest = json.loads((b / "manifest.json").read_text())
    manifest["metric_set"] = "full"
    (b / "manifest.json").write_text(json.dumps(manifest))
    assert main(["diff", str(a), str(b)]) == 0
    assert "compared on the figures both sides measured (metric sets 'roofline' vs 'full'); both measured every " \
           "compared figure" in capsys.readouterr().out
    manifest["gpu"]["name"] = "NVIDIA H100 80GB HBM3"
    (b / "manifest.json").write_text(json.dumps(manifest))
    assert main(["diff", str(a), str(b)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "contexts differ" in err and "metric_set" not in err
    assert "device: 'NVIDIA H200' vs 'NVIDIA H100 80GB HBM3'" in err


def test_a_side_that_records_no_device_is_compared_with_a_note(fx: Path, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A report against its own details export (which names no device): nothing differs, so it is no
    mismatch to refuse, but the device is said not checked; its compute capability still is."""
    assert main(["diff", str(fx / "decode_gemm.ncu-rep"), str(fx / "decode_gemm-details.csv")]) == 0
    out = capsys.readouterr().out
    assert "context: device: 'NVIDIA H200' vs 'not recorded' (not checked)" in out and "1 same" in out
    # the same export edited to another chip's CC and SM count (an A100's): its compute capability differs
    other = tmp_path / "a100-details.csv"
    other.write_text((fx / "decode_gemm-details.csv").read_text().replace('"9.0","', '"8.0","')
                     .replace('"# SMs","SM","132"', '"# SMs","SM","108"'))
    assert main(["diff", str(fx / "decode_gemm.ncu-rep"), str(other), "--fail-on", "duration_ns>+5%"]) == 2
    assert "contexts differ, refusing to compare (compute_capability: '9.0' vs '8.0')" in capsys.readouterr().err


# -- 1. gates in the units the table shows ---------------------------------------------------------
def test_percent_figures_gate_in_points_or_relative(pair: Callable[[float], tuple[str, str]],
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """%SoL 80.96 -> 73.60 (the kernel 10 % slower): -7.36 points, -9.09 % relative. Each gate reads
    the change it names, and the cell shows it; a bare number on a percent figure is refused."""
    base, cand = pair(1.10)
    assert main(["diff", base, cand, "--format", "json", "--fail-on", "pct_sol<-8pt"]) == 0  # -7.4 points
    sol = json.loads(capsys.readouterr().out)["kernels"][0]["figures"]["pct_sol"]
    assert sol["baseline"] == pytest.approx(80.9577, abs=1e-4) and sol["candidate"] == pytest.approx(73.5979, abs=1e-4)
    assert sol["change"] == pytest.approx(-7.3598, abs=1e-4) and sol["change_pct"] == pytest.approx(-100 / 11)
    assert sol["unit"] == "% of the roof"
    assert main(["diff", base, cand]) == 0
    assert "81 → 74 (-7.4pt)" in capsys.readouterr().out  # points, the figure being a percent
    assert main(["diff", base, cand, "--fail-on", "pct_sol<-8%"]) == 1  # -9.1 % relative
    out = capsys.readouterr().out
    assert "81 → 74 (-7.4pt, -9.1%)" in out and "gate FAILED: 1 kernel(s) crossed pct_sol<-8%" in out
    assert main(["diff", base, cand, "--fail-on", "pct_sol<-8"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pct_sol is a percent figure (% of the roof): write -8pt" in err


GEMV = "nvjet_sm90_tst_64x8_64x16_2x1_v_bz_NNT"


def test_map_keys_gate(fx: Path, sets_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`warp_stalls.barrier` and `flops.tensor_bf16` are figures like any other; on a capture that did
    not collect the stalls the gate is not evaluated, which is said and does not pass."""
    gates = ["--fail-on", "warp_stalls.barrier>+1pt", "--fail-on", "flops.tensor_bf16<-1%"]
    gemv = str(fx / "decode_gemm.ncu-rep")
    assert main(["diff", gemv, gemv, "--format", "json", *gates]) == 0
    doc = json.loads(capsys.readouterr().out)
    figures = doc["kernels"][0]["figures"]
    assert doc["passed"] and figures["warp_stalls.barrier"]["baseline"] == pytest.approx(0.013989, abs=1e-6)
    assert figures["flops.tensor_bf16"]["baseline"] == 1_073_741_824 and figures["flops.tensor_bf16"]["change"] == 0
    assert main(["diff", gemv, str(sets_dir / "ncu_roofline-torch.ncu-rep"), "--kernel", GEMV, *gates]) == 1
    out = capsys.readouterr().out
    assert "NOT EVALUATED" in out and "0.01399 → —" in out
    assert f"#1 {GEMV}: not evaluated: warp_stalls.barrier>+1pt (unmeasured in the candidate)" in out
    assert out.rstrip().endswith("gate NOT EVALUATED: 1 kernel(s) not evaluated on warp_stalls.barrier>+1pt")


@pytest.mark.parametrize("expr,problem", [
    ("duration_ns>>5%", "expected FIGURE OP LIMIT UNIT"), ("verdict>5%", "'verdict' is not a number figure"),
    ("duration>5%", "'duration' is not a number figure"), ("launch_id>0", "'launch_id' is not a number figure"),
    ("pct_sol<-3", "pct_sol is a percent figure (% of the roof): write -3pt for a change of 3 points or -3% for one "
                   "relative to the baseline"),
    ("duration_ns>+5pt", "pt (points) is for percent figures; duration_ns is in ns: write +5% for a relative change "
                         "or +5 for one in ns"),
    ("warp_stalls>1pt", "'warp_stalls' is a map: name one of its number keys as warp_stalls.KEY, e.g. "
                        "warp_stalls.barrier"),
    ("warp_stalls.bar>1pt", "'bar' is not a number key of warp_stalls; use one of barrier, branch_resolving"),
    ("limiter.kind>1%", "'kind' is not a number key of limiter; use one of pct, pct_datasheet, clock_hz"),
])
def test_bad_gate_is_one_line(pair: Callable[[float], tuple[str, str]], capsys: pytest.CaptureFixture[str],
                              expr: str, problem: str) -> None:
    base, cand = pair(1.0)
    assert main(["diff", base, cand, "--fail-on", expr]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and problem in err


def test_gate_arithmetic() -> None:
    g = parse("duration_ns > +5 %")
    assert (g.figure, g.op, g.limit, g.relative, g.text) == ("duration_ns", ">", 5.0, True, "duration_ns>+5%")
    assert g.fails(Change(100.0, 106.0)) and not g.fails(Change(100.0, 105.0))
    assert g.fails(Change(None, 1.0)) is None  # unmeasured: not evaluated, and said so
    points, relative = parse("pct_sol<-3pt"), parse("pct_sol<-3%")
    assert points.fails(Change(80.0, 76.0)) and not points.fails(Change(80.0, 78.0))
    assert relative.fails(Change(80.0, 77.0)) and not relative.fails(Change(80.0, 78.0))  # -3.75 % vs -2.5 %
    assert not parse("pipe_busy.tensor>=+10pt").relative and parse("pct_of_achievable.pct_memory<-1pt").figure


# -- 2. compared on what both sides measured -----------------------------------------------------
def test_different_counters_compare_on_the_common_figures(fx: Path, sets_dir: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """decode_gemm.ncu-rep against ncu's own roofline set of the same kernel (no occupancy, stall,
    divergence or L2 byte counters): compared, and the figures left out are named per side."""
    argv = ["diff", str(fx / "decode_gemm.ncu-rep"), str(sets_dir / "ncu_roofline-torch.ncu-rep"), "--kernel", GEMV]
    assert main([*argv, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["left_out"] == {"baseline": [], "candidate": [
        "achieved_active_warps_per_sm", "achieved_occupancy_pct", "branch_divergence_pct", "l2_bytes",
        "register_spill_pct", "simt_efficiency_pct", "warp_stalls"]}
    (k,) = doc["kernels"]
    assert k["status"] == "moved" and k["matched_by"] == "name"
    assert k["figures"]["achieved_occupancy_pct"]["candidate"] is None
    assert k["figures"]["duration_ns"]["baseline"] == 35_264
    assert main(argv) == 0
    assert "compared on the figures both sides measured (metric sets 'custom' vs 'ncu-roofline'); left out: the " \
           "candidate lacks achieved_active_warps_per_sm, achieved_occupancy_pct, branch_divergence_pct, l2_bytes" \
           in " ".join(capsys.readouterr().out.split())


def test_basic_against_full_compares_what_basic_measured(fx: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A `basic` capture (no FLOP or byte counters) against a full one of the same GEMM, bare reports."""
    assert main(["diff", str(fx / "gemm_basic.ncu-rep"), str(fx / "gemm_bf16.ncu-rep")]) == 0
    out = capsys.readouterr().out
    assert "left out: the baseline lacks achieved_dram_tbps, achieved_tflops, arithmetic_intensity" in out
    assert "the candidate lacks" not in out and "context differs" not in out
    assert "compute? → compute" in out  # provisional (basic: no FLOP or byte counters) against a roofline verdict


# -- 3. renamed instantiations paired by base name -----------------------------------------------
def test_renamed_instantiation_pairs_by_base_name(fx: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """FA2's flash_fwd_kernel non-causal (attention_fa2) against causal (the bundle): one template
    argument differs, so join's rule 2 pairs them, and the output says so."""
    argv = ["diff", str(fx / "attention_fa2.ncu-rep.gz"), str(fx / "bundle_attn_causal"), "--allow-mismatch"]
    assert main([*argv, "--format", "json"]) == 0
    (k,) = json.loads(capsys.readouterr().out)["kernels"]
    assert (k["kernel"], k["candidate_kernel"], k["matched_by"]) == (
        "flash_fwd_kernel<…(bool)0…>", "flash_fwd_kernel<…(bool)1…>", "base name")
    assert k["figures"]["duration_ns"]["baseline"] == 801_984 and k["figures"]["duration_ns"]["candidate"] == 492_928
    assert main(argv) == 0
    assert "#1 paired by base name: flash_fwd_kernel<…(bool)0…> (baseline) with flash_fwd_kernel<…(bool)1…> " \
           "(candidate)" in capsys.readouterr().out


def test_pairing_rules() -> None:
    """join's rules between two captures: full name across demangler spellings, then a base name that
    is one kernel's on each side; never a base name two kernels share, never by prefix."""
    a1, a2, a3 = (f"void ns::k<(int){n}>(float*)" for n in (1, 2, 3))
    assert pair_names([a1], ["void ns::k<1>(float *)"]) == [(0, 0, "name")]
    assert pair_names([a1], [a2]) == [(0, 0, "base name")]
    assert pair_names([a1, a2], [a1, a3]) == [(0, 0, "name"), (1, None, None), (None, 1, None)]  # k is two kernels
    assert pair_names(["gemm"], ["gemm_splitk"]) == [(0, None, None), (None, 0, None)]


# -- 4. --kernel, --ceilings, --achievable as on analyze -------------------------------------------
def test_kernel_ceilings_and_achievable(fx: Path, sets_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The decode GEMV of a one-kernel report against the same kernel in a nine-kernel full capture,
    held to the measured H200 ceilings (HBM 4.22 TB/s) as datasheet and as achievable."""
    measured = str(fx / "measured-ceilings-h200.yaml")
    argv = ["diff", str(fx / "decode_gemm.ncu-rep"), str(sets_dir / "full-torch.ncu-rep"), "--format", "json"]
    assert main(argv) == 0
    assert len(json.loads(capsys.readouterr().out)["kernels"]) == 9
    assert main([*argv, "--kernel", "regex:^nvjet_sm90_tst_64x8"]) == 0
    (k,) = json.loads(capsys.readouterr().out)["kernels"]
    assert k["kernel"] == GEMV and k["figures"]["pct_sol"]["baseline"] == pytest.approx(80.958, abs=1e-3)
    assert main([*argv, "--kernel", GEMV, "--ceilings", measured, "--achievable", measured,
                 "--fail-on", "pct_of_achievable.pct_memory<-1pt"]) == 0
    doc = json.loads(capsys.readouterr().out)
    figures = doc["kernels"][0]["figures"]
    tbps = figures["achieved_dram_tbps"]["baseline"]
    assert figures["pct_sol"]["baseline"] == pytest.approx(100 * tbps / 4.22, rel=1e-3)
    assert figures["pct_of_achievable.pct_memory"]["baseline"] == pytest.approx(100 * tbps / 4.22, rel=1e-3)
    assert figures["pct_of_achievable.pct_memory"]["change"] == pytest.approx(2.05, abs=0.01) and doc["passed"]


# -- goldens -------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt,ext", [("table", "txt"), ("json", "json"), ("csv", "csv"), ("markdown", "md")])
def test_golden_formats(fx: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                        golden: Callable[[str, str], None], fmt: str, ext: str) -> None:
    """FA2 non-causal against causal: a base-name pair, figures one side lacks, a context mismatch
    compared anyway, and a gate of each kind (passed, crossed, not evaluated)."""
    monkeypatch.chdir(fx)
    monkeypatch.delenv("COLUMNS", raising=False)
    assert main(["diff", "attention_fa2.ncu-rep.gz", "bundle_attn_causal", "--allow-mismatch", "--format", fmt,
                 "--fail-on", "duration_ns>+5%", "--fail-on", "pct_sol<-5pt", "--fail-on",
                 "warp_stalls.barrier>+1pt"]) == 1
    out = capsys.readouterr().out
    if fmt == "csv":  # RFC 4180 rows end in CRLF; the golden file is read as text
        assert out.count("\r\n") == out.count("\n")
        out = out.replace("\r\n", "\n")
    golden(f"diff-fa2.{ext}", out)


def test_closed_pipe_keeps_the_gate_and_prints_no_traceback(pair: Callable[[float], tuple[str, str]]) -> None:
    base, cand = pair(1.10)
    proc = subprocess.Popen([sys.executable, "-m", "kernelscope.cli", "diff", base, cand, "--fail-on",
                             "duration_ns>+5%"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before a byte is written (`| head -0`)
    err = proc.stderr.read().decode()
    assert proc.wait() == 1 and err == ""


def test_head_of_help_and_of_a_table(fx: Path) -> None:
    for argv in (["--help"], ["analyze", str(fx / "decode_gemm.ncu-rep")]):
        res = subprocess.run(f"{sys.executable} -m kernelscope.cli {' '.join(argv)} | head -1", shell=True,
                             capture_output=True, text=True, env={**os.environ, "COLUMNS": "100"})
        assert res.stderr == "" and res.stdout.count("\n") == 1


def test_pct_sol_is_compared_on_one_clock_basis(fx: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same GEMM with and without its clock counters: one side's roof is held at its measured
    clock (93 %), the other's at the datasheet's; pct_sol is compared at the datasheet clock on both,
    so an unchanged kernel does not fail `pct_sol<-3pt` (issue 28: 93 -> 82 was a false failure)."""
    import csv

    rows = list(csv.reader((fx / "gemm_bf16-raw.csv").open(newline="")))
    clocks = [i for i, h in enumerate(rows[0]) if h.startswith(("sm__cycles_elapsed.", "gpc__cycles_elapsed.",
                                                                 "smsp__cycles_elapsed."))]
    for row in rows[2:]:
        for i in clocks:
            row[i] = ""
    unclocked = tmp_path / "unclocked-raw.csv"
    with unclocked.open("w", newline="") as fh:
        csv.writer(fh, quoting=csv.QUOTE_ALL).writerows(rows)
    base = str(fx / "gemm_bf16-raw.csv")
    assert main(["diff", base, str(unclocked), "--fail-on", "pct_sol<-3pt", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    k = doc["kernels"][0]
    assert k["basis"] and k["basis"][0].startswith("pct_sol compared at the datasheet clock")
    assert k["figures"]["pct_sol"]["baseline"] == pytest.approx(k["figures"]["pct_sol"]["candidate"])
