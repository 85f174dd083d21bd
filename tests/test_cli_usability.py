"""The first hour: help with an example on every verb and exit codes, --format everywhere,
`ceilings list`, kernel-name hints, join keeping every --ncu, stdout closed or full as one-line
errors, and the Python API taking a Path and giving the raw counters."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import kernelscope
from kernelscope.cli import main, parser


def leaves(p: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...],
                                                                                   argparse.ArgumentParser]]:
    subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, p
    for action in subs:
        for name, child in action.choices.items():
            yield from leaves(child, (*path, name))


def test_every_verb_has_an_example_and_help_renders() -> None:
    found = list(leaves(parser()))
    assert len(found) >= 18
    for path, p in found:
        text = p.format_help()  # renders: no stray % in a help string
        assert "example:\n  kernelscope " + " ".join(path) in text, path
        for action in p._actions:
            if action.option_strings and action.dest != "help":
                assert action.help, f"{' '.join(path)} {action.option_strings[0]} has no help"


def test_top_level_help_has_exit_codes_and_no_developer_docstring(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "Exit codes: 0 done; 1 a gate failed (diff --fail-on" in out and "Start with:" in out
    assert "argparse" not in out and "app.py" not in out
    with pytest.raises(SystemExit):
        main(["diff", "--help"])
    assert "exit codes: 0 passed, 1 a gate failed, 2 an error" in capsys.readouterr().out


def test_abbreviated_options_are_refused(fx: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`analyze --out` is not a prefix of `--out-dir`: flags mean one thing, spelled out."""
    assert main(["analyze", str(fx / "decode_gemm.ncu-rep"), "--out", "x"]) == 2
    assert "unrecognized arguments: --out" in capsys.readouterr().err


def test_ceilings_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ceilings", "list", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rows = {r["key"]: r for r in doc["ceilings"]}
    assert rows["h200-sxm.compute.bf16"]["value"] == 989 and rows["h200-sxm.compute.bf16"]["unit"] == "TFLOP/s"
    assert rows["h200-sxm.memory.hbm"]["value"] == 4.8 and rows["h200-sxm.memory.hbm"]["unit"] == "TB/s"
    assert rows["h200-sxm.compute.int8"]["unit"] == "TOP/s" and rows["h100-sxm.compute.fp4"]["value"] is None
    assert main(["ceilings", "list", "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert "| `h200-sxm.compute.fp8` | 1979 | TFLOP/s | 1830 | NVIDIA H200 |" in md
    assert "| `h100-sxm.compute.fp4` | — |" in md


def test_ceilings_measure_without_torch_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("kernelscope")
    if __import__("importlib").util.find_spec("torch") is not None:
        pytest.skip("torch is installed here")
    assert main(["ceilings", "measure", "--out", str(tmp_path / "m.yaml")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "needs PyTorch" in err and not (tmp_path / "m.yaml").exists()


def test_exact_kernel_name_suggests_the_regex(fx: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(fx / "gemm_bf16.ncu-rep"), "--kernel", "nvjet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "did you mean --kernel regex:nvjet?" in err
    assert main(["analyze", str(fx / "gemm_bf16.ncu-rep"), "--kernel", "flash"]) == 2
    assert "kernels there: nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT" in capsys.readouterr().err


def test_join_keeps_every_ncu_input(fx: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["join", "--ncu", str(fx / "decode_gemm.ncu-rep"), "--ncu", str(fx / "fp8_gemm.ncu-rep"),
                 "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["kernels"]
    assert [(r["kernel"][:16], r["source"]) for r in rows] == [("nvjet_sm90_tst_6", "decode_gemm"),
                                                               ("nvjet_sm90_qqtst", "fp8_gemm")]


@pytest.mark.parametrize("verb", [["analyze"], ["join", "--ncu"], ["campaign", "check"]])
def test_every_format_on_tabular_verbs(fx: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       verb: list[str]) -> None:
    argv = [*verb, str(fx / "decode_gemm.ncu-rep")]
    if verb[0] == "campaign":
        assert main(["campaign", "import-ncu", "--root", str(tmp_path), "--campaign", "c", "--cell-id", "x",
                     str(fx / "decode_gemm.ncu-rep")]) == 0
        argv = [*verb, "--root", str(tmp_path), "--campaign", "c"]
        capsys.readouterr()
    for fmt in ("table", "json", "csv", "markdown"):
        assert main([*argv, "--format", fmt]) == 0, fmt
        out = capsys.readouterr().out
        assert out.strip(), fmt
        if fmt == "json":
            json.loads(out)
        if fmt == "markdown":
            assert "|---" in out


def run(shell: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", shell], capture_output=True, text=True,
                          env={**os.environ, "PY": sys.executable})


def test_closed_and_full_stdout_are_one_line_errors(fx: Path) -> None:
    rep = fx / "decode_gemm.ncu-rep"
    closed = run(f'"$PY" -m kernelscope.cli analyze {rep} >&-')
    assert closed.returncode == 2 and closed.stderr.count("\n") == 1 and "stdout is closed" in closed.stderr
    full = run(f'"$PY" -m kernelscope.cli analyze {rep} --format json > /dev/full')
    assert full.returncode == 2 and full.stderr.count("\n") == 1 and "No space left" in full.stderr


def test_report_out_must_be_a_file(fx: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(fx / "decode_gemm.ncu-rep"), "--out", f"{tmp_path}/reports/"]) == 2
    assert "names a directory; --out takes the file to write" in capsys.readouterr().err
    assert not (tmp_path / "reports").exists()


def test_launch_dry_run_prints_and_runs_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["launch", "--dry-run", "--ncu", "/opt/ncu", "--", "python3", "-m", "srv"]) == 0
    assert capsys.readouterr().out.startswith("/opt/ncu --mode launch")


def test_api_takes_a_path_and_gives_raw_counters(fx: Path) -> None:
    (rec,) = kernelscope.load(fx / "decode_gemm.ncu-rep")
    assert rec.metrics["gpu__time_duration.sum"] == pytest.approx(35_264)
    items, _ = kernelscope.analyze(fx / "decode_gemm.ncu-rep")
    assert items[0].record.metrics is rec.metrics or items[0].record.metrics == rec.metrics
