"""`diff` as a gate: kernels matched by name, the figures that moved, `--fail-on` thresholds and
their exit codes, the context check on every input kind, markdown for a PR, and a closed pipe."""

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
    assert "moved" in out and "35.3 → 38.8 (+10.0 %)" in out
    assert main(["diff", base, cand, "--fail-on", "duration_ns>+5%"]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "gate FAILED: 1 kernel(s) crossed duration_ns>+5%" in out
    assert main(["diff", base, cand, "--fail-on", "duration_ns>+15%"]) == 0
    assert "gate passed: duration_ns>+15%" in capsys.readouterr().out
    assert main(["diff", base, cand, "--fail-on", "achieved_tflops<-5%", "--fail-on", "duration_ns>+50%"]) == 1
    assert "achieved_tflops<-5%" in capsys.readouterr().out
    assert main(["diff", base, cand, "--fail-on", "duration_ns>+3000"]) == 1  # absolute: 3.5 µs slower > 3,000 ns
    capsys.readouterr()
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
    assert header == "kernel,status,figure,baseline,candidate,change,change_pct,failed_gates"
    duration = next(r for r in rows if ",duration_ns," in r).split(",")
    assert duration[1] == "FAIL" and float(duration[3]) == pytest.approx(35_264) and duration[-1] == "duration_ns>+5%"


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
    assert "summed kernel time µs (all launches) 70.5 → 84.6 (+20.0 %)" in out
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
    assert "3 → 5" in out and "35.3 → 35.3 (+0.0 %)" in out
    assert "summed kernel time µs (one launch of each kernel: launch counts differ) 35.3 → 35.3 (+0.0 %)" in out


def test_context_check_on_bare_reports(fx: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A `basic` capture against a full one is refused even with no manifest to say so."""
    assert main(["diff", str(fx / "gemm_basic.ncu-rep"), str(fx / "gemm_bf16.ncu-rep")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "measured figures differ: the baseline lacks achieved_dram_tbps" in err
    assert main(["diff", str(fx / "gemm_basic.ncu-rep"), str(fx / "gemm_bf16.ncu-rep"), "--allow-mismatch"]) == 0
    out = capsys.readouterr().out
    assert "context differs (compared anyway, --allow-mismatch): measured figures differ" in out
    assert "compute? → compute" in out  # provisional (basic: no FLOP or byte counters) against a roofline verdict


def test_context_check_on_bundles(fx: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(fx / "bundle_attn_causal", a)
    shutil.copytree(fx / "bundle_attn_causal", b)
    assert main(["diff", str(a), str(b), "--fail-on", "duration_ns>+1%"]) == 0
    assert "1 same; summed kernel time µs (all launches) 492.9 → 492.9 (+0.0 %); gate passed" in capsys.readouterr().out
    manifest = json.loads((b / "manifest.json").read_text())
    manifest["gpu"]["name"] = "NVIDIA H100 80GB HBM3"
    manifest["metric_set"] = "full"
    (b / "manifest.json").write_text(json.dumps(manifest))
    assert main(["diff", str(a), str(b)]) == 2
    err = capsys.readouterr().err
    assert "contexts differ" in err and "device: 'NVIDIA H200' vs 'NVIDIA H100 80GB HBM3'" in err
    assert "metric_set: 'roofline' vs 'full'" in err


@pytest.mark.parametrize("expr,problem", [
    ("duration_ns>>5%", "expected FIGURE OP LIMIT[%]"), ("verdict>5%", "'verdict' is not a number figure"),
    ("duration>5%", "'duration' is not a number figure"), ("launch_id>0", "'launch_id' is not a number figure"),
])
def test_bad_gate_is_one_line(pair: Callable[[float], tuple[str, str]], capsys: pytest.CaptureFixture[str],
                              expr: str, problem: str) -> None:
    base, cand = pair(1.0)
    assert main(["diff", base, cand, "--fail-on", expr]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and problem in err


def test_gate_arithmetic() -> None:
    g = parse("duration_ns > +5 %")
    assert (g.figure, g.op, g.limit, g.relative) == ("duration_ns", ">", 5.0, True)
    assert g.fails(Change(100.0, 106.0)) and not g.fails(Change(100.0, 105.0))
    assert g.fails(Change(None, 1.0)) is None  # unmeasured: not evaluated, and said so
    assert parse("pct_sol<-3").fails(Change(80.0, 76.0)) and not parse("pct_sol<-3").fails(Change(80.0, 78.0))


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
