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


READING = [("analyze",), ("report",), ("roofline",), ("join",), ("bundle", "kernel-internals")]
SHARED = ("--kernel", "--hw", "--ceilings", "--achievable")


def test_every_verb_that_reads_reports_takes_inputs_and_options_one_way() -> None:
    verbs = dict(leaves(parser()))
    helps = {}
    for path in READING:
        acts = {a.option_strings[0] if a.option_strings else a.dest: a for a in verbs[path]._actions}
        assert "inputs" in acts, path
        for opt in SHARED:
            helps.setdefault(opt, set()).add(acts[opt].help)
    assert all(len(h) == 1 for h in helps.values()), helps  # one option, one meaning
    for path, alias in ((("join",), "--ncu"), (("bundle", "kernel-internals"), "--bundle")):
        acts = {a.option_strings[0]: a for a in verbs[path]._actions if a.option_strings}
        assert "the earlier spelling, still accepted" in (acts[alias].help or "")


def test_join_and_kernel_internals_take_positional_inputs(fx: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["join", str(fx / "decode_gemm.ncu-rep"), str(fx / "fp8_gemm.ncu-rep"), "--format", "json"]) == 0
    assert [r["source"] for r in json.loads(capsys.readouterr().out)["kernels"]] == ["decode_gemm", "fp8_gemm"]
    assert main(["join"]) == 2
    assert capsys.readouterr().err == ("kernelscope: error: no input: name the .ncu-rep reports, ncu CSV exports (raw "
                                       "or details page) or bundle directories as arguments\n")
    assert main(["bundle", "kernel-internals", str(fx / "decode_gemm.ncu-rep")]) == 2
    assert "decode_gemm.ncu-rep: not a bundle directory" in capsys.readouterr().err


def test_achievable_figures_are_in_the_table(fx: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(fx / "bundle_attn_causal"), str(fx / "decode_gemm.ncu-rep"), "--achievable",
                 str(fx / "measured-ceilings-h200.yaml")]) == 0
    head, _, *rows = capsys.readouterr().out.splitlines()[1:5]
    assert "ach comp %  ach mem %  next lever" in head
    assert [r.split()[-3:] for r in rows] == [["38", "14", "wgmma-kernel"], ["4", "92", "batch-rows"]]


@pytest.mark.parametrize("extra,message", [
    (["--details", "--format", "json"], "analyze --details: --format json holds every launch (one object each) with "
                                        "its verdict, limiters and levers; the details are the table's"),
    (["--details", "--format", "csv"], "analyze --details: --format csv holds every launch (one row each)"),
    (["--details", "--format", "markdown"], "analyze --details: the markdown is the table and next levers for a PR"),
    (["--details", "--out-dir", "OUT"], "analyze --details: --out-dir alone writes kernels.json and kernels.csv"),
    (["--per-launch", "--format", "json"], "analyze --per-launch: --format json holds every launch (one object each) "
                                           "already"),
    (["--per-launch", "--format", "csv"], "analyze --per-launch: --format csv holds every launch (one row each) "
                                          "already"),
    (["--per-launch", "--out-dir", "OUT"], "analyze --per-launch: --out-dir alone writes kernels.json"),
    (["--jobs", "4"], "analyze --jobs: the table is built in this process; --jobs reads a large input in parts"),
    (["--jobs", "4", "--format", "markdown"], "analyze --jobs: the markdown is built in this process"),
    (["--jobs", "4", "--format", "table", "--out-dir", "OUT"], "analyze --jobs: the table is built in this process"),
])
def test_an_option_that_does_not_apply_is_refused(fx: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  extra: list[str], message: str) -> None:
    out = tmp_path / "out"
    argv = ["analyze", str(fx / "decode_gemm.ncu-rep"), *[str(out) if x == "OUT" else x for x in extra]]
    assert main(argv) == 2
    res = capsys.readouterr()
    assert res.err.startswith(f"kernelscope: error: {message}") and res.err.count("\n") == 1 and res.out == ""
    assert not out.exists()


def test_achievable_where_nothing_shows_it_is_refused(fx: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    measured = str(fx / "measured-ceilings-h200.yaml")
    assert main(["roofline", str(fx / "decode_gemm.ncu-rep"), "--achievable", measured, "--out",
                 str(tmp_path / "r.png")]) == 2
    assert "roofline --achievable: the plot draws the roofs of one ceilings file; to draw measured ones, give that " \
           "file as --ceilings" in capsys.readouterr().err and not (tmp_path / "r.png").exists()
    bundle = tmp_path / "b"
    bundle.mkdir()
    assert main(["bundle", "kernel-internals", str(bundle), "--achievable", measured]) == 2
    assert "bundle kernel-internals --achievable: inference_perfbench_v1's kernel_internals has no figure against " \
           "measured ceilings" in capsys.readouterr().err and not any(bundle.iterdir())


def test_kernels_dry_run_refuses_a_format(capsys: pytest.CaptureFixture[str]) -> None:
    """--dry-run prints a command, not the listing --format would shape: refused, not ignored."""
    assert main(["kernels", "--dry-run", "--format", "json", "--", "python3", "step.py"]) == 2
    assert capsys.readouterr().err == ("kernelscope: error: kernels --format: --dry-run prints the ncu command that "
                                       "would list the kernels, not a listing to format\n")


def test_op_refuses_the_shape_of_another_op(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kernelscope.capture import harness

    out = str(tmp_path / "b")
    for argv, message in ((["softmax", "--m", "8"], "op softmax takes no --m (it reads --dtype, --rows, --cols)"),
                          (["gemm", "--rows", "8", "--causal"], "op gemm takes no --causal, --rows (it reads --dtype, "
                                                                "--m, --n, --k)"),
                          (["attention", "--dtype", "fp8"], "op attention --dtype fp8: only gemm has an fp8 path"),
                          (["callable", "--dtype", "bf16", "--kernel", "k"], "op callable takes no --dtype")):
        assert main(["op", *argv, "--out", out, "--dry-run"]) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith(f"kernelscope: error: {message}") and err.count("\n") == 1, err
    with pytest.raises(SystemExit) as stop:  # the harness itself, as ncu runs it
        harness.main(["softmax", "--m", "8"])
    assert stop.value.code == 2 and "op softmax takes no --m" in capsys.readouterr().err
    assert main(["op", "softmax", "--rows", "8", "--out", out, "--dry-run"]) == 0
    assert "kernelscope.capture.harness softmax --dtype bf16 --rows 8 --cols 8192 --warmup 3 --iters 2\n" \
        in capsys.readouterr().out


def test_join_names_each_figure_as_analyze_does(fx: Path) -> None:
    """One name a figure: join's table is analyze's columns (same keys, same headings) and its own
    profile columns; its JSON and CSV use the keys of the column spec."""
    from kernelscope.columns import BY_NAME
    from kernelscope.report import join, kernels

    items, _ = kernelscope.analyze([fx / "decode_gemm.ncu-rep", fx / "fp8_gemm.ncu-rep"])
    ours = [(c.key, c.heading) for c in kernels.table(kernels.ranked(items)).cols]
    theirs = [(c.key, c.heading) for c in join.table(join.join(items, {}, {"x": 1.0})).cols]
    assert [c for c in theirs if c[0] != "samples_pct"] == ours
    assert ("pct_sol", "roof %") in ours and ("pct_sol_compute", "SoL comp %") in ours
    assert set(join.JOINED) <= set(BY_NAME)
