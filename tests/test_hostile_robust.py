"""Hostile input found by issue 18's fuzz pass, class by class: numbers out of range (every verb
and format reads them as unmeasured, with a note, or refuses the file in one line), markup and
escapes (names are inert in every output, errors included), signals (SIGTERM and SIGHUP clean up
as Ctrl-C does) and the Python API given the wrong types. Counted by hostile.py's tally."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import kernelscope
from hostile import BY_CLASS, LAST_ERROR, TALLY, api, cli
from kernelscope.cli import main
from kernelscope.columns import kernel_object
from kernelscope.report.writers import dumps
from test_hostile import RAW, raw_with

FX = Path(__file__).parent / "fixtures"
NUMBERS = "numbers out of range"
MARKUP = "markup and escapes"
SIGNALS = "signals"
API_TYPES = "API types"
OUT_OF_RANGE = "out of range (not 0, nor a magnitude from 1e-30 to 1e30), so not measured"


def every_verb(path: Path, tmp: Path) -> list[list[str]]:
    """Every verb that reads a report, in every format, pointed at `path`: the campaign verbs on a
    campaign made of it."""
    p, root, base = str(path), str(tmp / "camp"), str(FX / "decode_gemm-raw.csv")
    camp = ["--root", root, "--campaign", "x"]
    return [["analyze", p, "--details"], *(["analyze", p, "--format", f] for f in ("json", "csv", "markdown")),
            ["analyze", p, "--out-dir", str(tmp / "out")],
            ["report", p, "--out", str(tmp / "r.html")], ["roofline", p, "--out", str(tmp / "r.svg")],
            *(["diff", base, p, "--allow-mismatch", "--format", f] for f in ("table", "json", "csv")),
            *(["join", "--ncu", p, "--format", f] for f in ("table", "json", "markdown")),
            ["campaign", "import-ncu", *camp, "--cell-id", "c1", p],
            ["campaign", "render", *camp], ["campaign", "check", *camp, "--format", "json"],
            ["campaign", "export", *camp, "--parquet", str(tmp / "pq")]]


def kernel_of(path: Path) -> dict[str, Any]:
    """The launch's kernel object, as `analyze --format json` writes it."""
    assert api(lambda: kernelscope.analyze(path, hw="h200-sxm"), klass=NUMBERS) == "handled"
    (a,), _ = kernelscope.analyze(path, hw="h200-sxm")
    return json.loads(dumps(kernel_object(a)))


# -- numbers out of range ------------------------------------------------------------------------
@pytest.mark.parametrize(("values", "figure", "note"), [
    ({"sm__cycles_elapsed.avg.per_second": "0"}, "sm_clock_hz",
     "sm_clock_hz reads 0: a launch that ran had a clock, so not measured"),
    ({"dram__cycles_elapsed.avg.per_second": "0"}, "dram_clock_hz",
     "dram_clock_hz reads 0: a launch that ran had a clock, so not measured"),
    ({"launch__waves_per_multiprocessor": "1e-300"}, "waves_per_sm",
     f"counters {OUT_OF_RANGE}: launch__waves_per_multiprocessor"),
    ({"gpu__time_duration.sum": "1e-320"}, "duration_ns", f"counters {OUT_OF_RANGE}: gpu__time_duration.sum"),
    # the export holds DRAM bytes three ways (byte sums, sector sums, rate x duration): all corrupt, none read
    ({"dram__bytes_read.sum": "1e-320", "dram__sectors_read.sum": "1e-320", "dram__bytes.sum.per_second": "1e-320"},
     "dram_bytes",
     f"counters {OUT_OF_RANGE}: dram__bytes.sum.per_second, dram__bytes_read.sum, dram__sectors_read.sum"),
    ({"launch__registers_per_thread": "1e-320"}, "registers_per_thread",
     f"counters {OUT_OF_RANGE}: launch__registers_per_thread"),
])
def test_numbers_out_of_range_are_unmeasured_in_every_verb(tmp_path: Path,
                                                          values: dict[str, str], figure: str, note: str) -> None:
    """Clocks of 0 and waves of 1e-300 were a ZeroDivisionError, subnormal durations and bytes an
    OverflowError (report, roofline) or Infinity in JSON (diff, join): now the figure is null,
    unmeasured, with a note saying why, and every verb and format handles the launch."""
    path = tmp_path / "k.csv"
    path.write_text(raw_with(values))
    k = kernel_of(path)
    assert k[figure] is None and figure in k["unmeasured"] and note in k["notes"]
    for argv in every_verb(path, tmp_path):
        assert cli(argv, klass=NUMBERS) == "handled", LAST_ERROR[0]
    assert (tmp_path / "r.svg").stat().st_size > 0 and (tmp_path / "pq" / "campaign=x").is_dir()


def test_a_grid_of_a_few_billionths_of_a_wave_is_one_partial_wave(tmp_path: Path) -> None:
    """In range, but under the 1e-9 slack of the wave count: its last wave is its only one."""
    path = tmp_path / "k.csv"
    path.write_text(raw_with({"launch__waves_per_multiprocessor": "1e-20"}))
    k = kernel_of(path)
    assert k["waves_per_sm"] == 1e-20 and k["bound"] == "memory"


def test_a_figure_past_the_range_is_null_with_a_note(tmp_path: Path) -> None:
    """Both counters in range, their ratio not (FLOP over 1e-26 ns): null, unmeasured, noted, in
    every verb (the derived figure is nulled where it is made, not only in the JSON)."""
    path = tmp_path / "k.csv"
    path.write_text(raw_with({"gpu__time_duration.sum": "1e-29"}))
    k = kernel_of(path)
    assert k["achieved_tflops"] is None and k["pct_sol_compute"] is None
    assert f"{OUT_OF_RANGE}: achieved_tflops, achieved_dram_tbps" in k["notes"]
    for argv in every_verb(path, tmp_path)[5:10]:  # report, roofline, diff
        assert cli(argv, klass=NUMBERS) == "handled", LAST_ERROR[0]


def test_sm_busy_0_on_a_basic_page_is_left_off_the_roofline(tmp_path: Path) -> None:
    """A capture without FLOP and byte counters is placed by SM busy; SM busy 0 has no place on
    log axes (it was a ValueError from log10): listed as unplaced, the plot and report drawn."""
    from kernelscope.report import kernels
    from kernelscope.report.roofline_data import build

    head = next(csv.reader(io.StringIO(RAW)))
    basic = ("sm__ops_path_tensor", "sm__sass_thread_inst_executed_op", "smsp__sass_thread_inst_executed_op",
             "dram__bytes", "derived__")
    cells = {h: "" for h in head if h.startswith(basic)} | {"sm__throughput.avg.pct_of_peak_sustained_elapsed": "0"}
    path = tmp_path / "basic.csv"
    path.write_text(raw_with(cells))
    items, table = kernelscope.analyze(path)
    data = build(kernels.ranked(items, False), table)
    assert data.points == () and data.unplaced == (1,)
    for argv in (["roofline", str(path), "--out", str(tmp_path / "r.svg")],
                 ["report", str(path), "--out", str(tmp_path / "r.html")]):
        assert cli(argv, klass=NUMBERS) == "handled", LAST_ERROR[0]
    assert "no AI and no SM busy" in (tmp_path / "r.svg").read_text()


def _ceilings(tmp: Path, old: str, new: str) -> Path:
    text = (Path(kernelscope.__file__).parent / "ceilings" / "sol-ceilings.yaml").read_text()
    assert old in text
    path = tmp / "c.yaml"
    path.write_text(text.replace(old, new, 1))
    return path


@pytest.mark.parametrize(("old", "new", "key"), [
    ("tbps: 4.8", "tbps: 1.0e-320", "h200-sxm.memory.hbm.tbps"),
    ("tflops: 989,", "tflops: 1" + "0" * 400 + ",", "h100-sxm.compute.bf16.tflops"),
    ("clock_mhz: 3201", "clock_mhz: 1.0e-320", "h200-sxm.memory.hbm.clock_mhz"),
    ("ratio: 0.667", "ratio: 1.0e-320", "h100-sxm.tensor_paths.mma.sync.ratio"),
    ("tbps: 4.8", "tbps: 2.0e+30", "h200-sxm.memory.hbm.tbps"),
])
def test_ceilings_out_of_range_are_one_error(tmp_path: Path, old: str, new: str, key: str) -> None:
    """An integer past a float was an OverflowError, a subnormal peak a ZeroDivisionError."""
    path = _ceilings(tmp_path, old, new)
    for argv in (["analyze", str(FX / "decode_gemm.ncu-rep"), "--ceilings", str(path)],
                 ["ceilings", "list", "--ceilings", str(path), "--format", "json"],
                 ["analyze", str(FX / "decode_gemm.ncu-rep"), "--achievable", str(path)]):
        assert cli(argv, klass=NUMBERS) == "clean"
        assert f"{path}: {key} must be a positive number from 1e-30 to 1e30, or null, got " in LAST_ERROR[0]


def test_a_launch_id_past_int64_is_refused(tmp_path: Path) -> None:
    """An ID over int64 was read, stored in the cell, and broke `campaign export` (OverflowError)."""
    path = tmp_path / "k.csv"
    for launch in ("99999999999999999999", "9223372036854775808", "1.5", "-1"):
        path.write_text(raw_with({"ID": launch}))
        for argv in (["analyze", str(path)], ["campaign", "import-ncu", "--root", str(tmp_path / "camp"),
                                              "--campaign", "x", "--cell-id", "c1", str(path)]):
            assert cli(argv, klass=NUMBERS) == "clean"
            assert LAST_ERROR[0] == (f"kernelscope: error: {path}: launch ID '{launch}' is not a whole number from 0 "
                                     "to 9,223,372,036,854,775,807\n")
    path.write_text(raw_with({"ID": "9223372036854775807"}))
    assert kernelscope.load(path)[0].launch_id == 2**63 - 1


def _campaign(tmp: Path) -> tuple[list[str], Path]:
    camp = ["--root", str(tmp / "camp"), "--campaign", "x"]
    assert cli(["campaign", "import-ncu", *camp, "--cell-id", "c1", str(FX / "decode_gemm.ncu-rep")],
               klass=NUMBERS) == "handled"
    return camp, tmp / "camp" / "x" / "cells" / "c1" / "ncu_kernels.json"


@pytest.mark.parametrize(("field", "value"), [("launch_id", 2**70), ("duration_ns", 1e-320),
                                              ("achieved_tflops", 1e300), ("pct_sol", -1e31)])
def test_a_cell_out_of_range_is_refused_by_every_campaign_verb(tmp_path: Path, field: str, value: float) -> None:
    """A cell edited by hand: an integer over int64 broke the Parquet export, a figure out of range
    the roofline; kernelscope never writes one, so reading one back is one error naming the field."""
    camp, cell = _campaign(tmp_path)
    doc = json.loads(cell.read_text())
    doc["kernels"][0][field] = value
    cell.write_text(json.dumps(doc))
    for verb in (["render"], ["check"], ["export", "--parquet", str(tmp_path / "pq")]):
        assert cli(["campaign", verb[0], *camp, *verb[1:]], klass=NUMBERS) == "clean"
        assert f"campaign cell: kernels[0].{field}: expected " in LAST_ERROR[0]
    assert not (tmp_path / "pq").exists() or not any((tmp_path / "pq").iterdir())


def test_export_onto_a_file_or_a_place_it_cannot_write_is_one_error(tmp_path: Path) -> None:
    """`--parquet` onto a file (FileExistsError), below a file (NotADirectoryError), where nothing
    can be made (/proc, /sys), or onto a partition that is a file or a link: one line, nothing
    changed, no staging folder left."""
    camp, _ = _campaign(tmp_path)
    (tmp_path / "afile").write_text("keep")
    for where, error in ((tmp_path / "afile", "not a directory; the export is written into one"),
                         (tmp_path / "afile" / "sub", "cannot write the export here (Not a directory)"),
                         (Path("/proc/kernelscope-export"), "cannot write the export here (No such file"),
                         (Path("/sys/kernelscope-export"), "cannot write the export here (Operation not permitted)")):
        assert cli(["campaign", "export", *camp, "--parquet", str(where)], klass=NUMBERS) == "clean"
        assert error in LAST_ERROR[0]
    assert (tmp_path / "afile").read_text() == "keep"
    for name, make in (("file", lambda p: p.write_text("keep")), ("link", lambda p: p.symlink_to(tmp_path / "afile"))):
        out = tmp_path / name
        out.mkdir()
        make(out / "campaign=x")
        assert cli(["campaign", "export", *camp, "--parquet", str(out)], klass=NUMBERS) == "clean"
        assert f"{out / 'campaign=x'}: not a directory (a file or a link); refusing to replace it" in LAST_ERROR[0]
        assert [p.name for p in out.iterdir()] == ["campaign=x"]
    assert cli(["campaign", "export", *camp, "--parquet", str(tmp_path / "pq")], klass=NUMBERS) == "handled"
    partition = tmp_path / "pq" / "campaign=x"
    assert partition.stat().st_mode & 0o755 == 0o755  # readable by the dataset's readers, not mkdtemp's 0700


DEEP = "[" * 100_000 + "]" * 100_000


def test_json_nested_100000_deep_is_one_error(tmp_path: Path) -> None:
    """A campaign cell, a bundle manifest and a bundle's inference_perfbench_v1.json nested
    100,000 deep: each one line (the last was a RecursionError)."""
    camp, cell = _campaign(tmp_path)
    cell.write_text(cell.read_text().rstrip()[:-1] + f', "deep": {DEEP}}}')
    assert cli(["campaign", "check", *camp], klass=NUMBERS) == "clean"
    # so deep a document is also one value in 2 bytes: refused before it is parsed (files.load_json)
    assert LAST_ERROR[0].startswith(f"kernelscope: error: {cell}: campaign cell of ")
    assert LAST_ERROR[0].endswith("not a document it wrote\n")
    bundle = tmp_path / "bundle"
    shutil.copytree(FX / "bundle_attn_causal", bundle)
    (bundle / "inference_perfbench_v1.json").write_text(f'{{"a": {DEEP}}}')
    assert cli(["bundle", "kernel-internals", "--bundle", str(bundle)], klass=NUMBERS) == "clean"
    assert LAST_ERROR[0] == (f"kernelscope: error: {bundle / 'inference_perfbench_v1.json'}: "
                             "inference_perfbench_v1.json nests too deeply\n")
    manifest = bundle / "manifest.json"
    manifest.write_text(manifest.read_text().rstrip()[:-1] + f', "deep": {DEEP}}}')
    assert cli(["analyze", str(bundle)], klass=NUMBERS) == "clean"
    assert LAST_ERROR[0].startswith(f"kernelscope: error: {manifest}: bundle manifest of ")


# -- the Python API given the wrong types --------------------------------------------------------
def test_to_dataframe_given_the_wrong_types_is_one_error() -> None:
    records = kernelscope.load(FX / "decode_gemm.ncu-rep")
    for items in (None, 3, "records", b"records", {"a": 1}, [None], [1], [records[0], "x"]):
        assert api(lambda items=items: kernelscope.to_dataframe(items), klass=API_TYPES) == "clean"
    assert api(lambda: kernelscope.to_dataframe(iter(records)), klass=API_TYPES) == "handled"
    frame = kernelscope.to_dataframe(records)
    assert frame["duration_ns"].tolist() == [records[0].duration_ns] and len(frame.columns) > 100


# -- markup and escapes --------------------------------------------------------------------------
ESCAPES = "\x1b]8;;https://evil.example\x07link\x1b]8;;\x07\x1b[2J\x1b[31m\x9b31m\x9d0;title\x07\u202e\x7f"
LIVE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")  # what a terminal acts on


def outputs(argv: list[str]) -> tuple[str, str]:
    """stdout and stderr of one CLI run (counted in the tally, which keeps only stderr)."""
    cli(argv, klass=MARKUP)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), contextlib.suppress(SystemExit):
        main(argv)
    return out.getvalue(), err.getvalue()


def code_spans_close_at_their_end(line: str) -> None:
    """Each table cell or list item that opens a code span closes it at its own fence (CommonMark:
    a run of backticks closes only a span opened by a run of the same length)."""
    for m in re.finditer(r"(`+) ", line):
        fence = m.group(1)
        close = line.index(f" {fence}", m.end())
        inside = line[m.end():close]
        assert all(len(run) != len(fence) for run in re.findall("`+", inside)), line
        return
    raise AssertionError(f"no code span in {line!r}")


def test_a_name_of_backticks_stays_in_its_code_span(tmp_path: Path) -> None:
    """Two backticks in a name closed the markdown code span (`` name ``), so an image link in a
    name rendered in a PR comment: the fence is now longer than any run of backticks in it."""
    path = tmp_path / "k.csv"
    name = "x``![p](https://evil.example/p.png)```y"
    path.write_text(raw_with({}, name=name))
    for argv in (["analyze", str(path), "--format", "markdown"], ["join", "--ncu", str(path), "--format", "markdown"],
                 ["diff", str(FX / "decode_gemm-raw.csv"), str(path), "--format", "markdown"]):
        out, _ = outputs(argv)
        lines = [line for line in out.splitlines() if "evil.example" in line]
        assert lines and all(f"```` {name} ````" in line for line in lines), out
        for line in lines:
            code_spans_close_at_their_end(line[line.index("````"):])


def test_escape_sequences_in_names_are_inert_in_every_output(tmp_path: Path) -> None:
    """ESC, OSC and CSI sequences (C0 and C1 forms) and bidi overrides from a kernel name reached
    the terminal through `--format csv`, and JSON through orjson (C1 raw): now nothing a terminal
    acts on is printed, and JSON keeps the name whole, its controls as \\u escapes."""
    path = tmp_path / "k.csv"
    name = f"evil{ESCAPES}kernel"
    path.write_text(raw_with({}, name=name))
    base = str(FX / "decode_gemm-raw.csv")
    for argv in (*(["analyze", str(path), "--format", f] for f in ("table", "csv", "json", "markdown")),
                 ["analyze", str(path), "--details"],
                 *(["diff", base, str(path), "--format", f] for f in ("table", "csv", "json", "markdown")),
                 *(["join", "--ncu", str(path), "--format", f] for f in ("table", "csv", "json", "markdown"))):
        out, err = outputs(argv)
        assert "evil" in out and not LIVE.search(out) and not LIVE.search(err), (argv, out[-400:])
        if "json" in argv:  # the name whole, read back
            assert json.dumps(name)[1:-1] in json.dumps(json.loads(out))
    out, _ = outputs(["analyze", str(path), "--format", "json"])
    assert "\\u009b31m" in out and json.loads(out)["kernels"][0]["name_full"] == name
    out, _ = outputs(["analyze", str(path), "--format", "csv"])
    (row,) = csv.DictReader(io.StringIO(out, newline=""))
    assert row["name_full"] == "evillink  kernel"  # sequences dropped, lone controls as spaces
    assert cli(["analyze", str(path), "--out-dir", str(tmp_path / "od")], klass=MARKUP) == "handled"
    assert not LIVE.search((tmp_path / "od" / "kernels.csv").read_bytes().decode())
    assert not LIVE.search((tmp_path / "od" / "kernels.json").read_text())


def test_error_lines_are_inert(tmp_path: Path) -> None:
    """Error lines are built from file names, names and ceilings keys: printed in the one place
    that prints them (cli.main, argparse's refusals included), inert."""
    escapes = ESCAPES.replace("/", "")  # file names too
    bad = tmp_path / f"report{escapes}.csv"
    bad.write_text("not a report")
    ceilings = _ceilings(tmp_path, "  h200-sxm:\n", f"  'h200{escapes}':\n")
    for argv in (["analyze", str(bad)], ["analyze", str(tmp_path / f"gone{escapes}")],
                 ["analyze", str(FX / "decode_gemm.ncu-rep"), "--format", f"x{escapes}"],
                 ["analyze", str(FX / "decode_gemm.ncu-rep"), f"--no-such{escapes}"],
                 ["analyze", str(FX / "decode_gemm.ncu-rep"), "--hw", f"h200{escapes}"],
                 ["ceilings", "list", "--ceilings", str(_ceilings(tmp_path, "tbps: 4.8", "tbps: -1"))],
                 ["analyze", str(FX / "decode_gemm.ncu-rep"), "--ceilings", str(ceilings), "--hw", "nope"],
                 ["campaign", "check", "--root", str(tmp_path), "--campaign", f"c{escapes}"]):
        assert cli(argv, klass=MARKUP) == "clean"
        line = LAST_ERROR[0]
        assert line.startswith("kernelscope: error: ") and line.count("\n") == 1 and not LIVE.search(line), line
    assert "not a regular" in LAST_ERROR[0] or "use letters, digits" in LAST_ERROR[0]


# -- signals -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def big_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real raw export replicated to 8,000 launches (~90 MB): seconds to import."""
    from conftest import raw_csv_variant

    return raw_csv_variant(FX / "decode_gemm-raw.csv", tmp_path_factory.mktemp("big") / "big.csv", copies=8000)


def stopped_when(argv: list[str], appears: Callable[[], bool], signum: int) -> tuple[int, str]:
    """Run the CLI in its own process, send `signum` as soon as `appears()` (its staging is on disk,
    so the verb is mid-write), and return its exit code and stderr."""
    proc = subprocess.Popen([sys.executable, "-m", "kernelscope.cli", *argv], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not appears() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    return proc.returncode, err.decode()


@contextlib.contextmanager
def signal_attempt() -> Iterator[None]:
    """One signal attempt in hostile.py's tally: handled when the run cleaned up and exited 128 + N."""
    TALLY["tried"] += 1
    BY_CLASS[SIGNALS] += 1
    try:
        yield
    except BaseException:
        TALLY["failures"] += 1
        raise
    TALLY["handled"] += 1


def _hidden(d: Path) -> list[str]:
    return [e.name for e in d.iterdir() if e.name.startswith(".") and e.name != ".lock"] if d.is_dir() else []


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_during_import_leaves_no_staging(tmp_path: Path, big_csv: Path, signum: int) -> None:
    """SIGTERM (or SIGHUP) while `campaign import-ncu` copies and judges a real bundle and a large
    export left its `.c1.importing.*` folder: now it cleans up as Ctrl-C does and exits 128 + N."""
    cells = tmp_path / "camp" / "x" / "cells"
    with signal_attempt():
        code, err = stopped_when(["campaign", "import-ncu", "--root", str(tmp_path / "camp"), "--campaign", "x",
                                  "--cell-id", "c1", str(FX / "bundle_attn_causal"), str(big_csv)],
                                 lambda: bool(_hidden(cells)), signum)
        assert code == 128 + signum, err
        assert err.splitlines()[-1] == f"kernelscope: stopped by {signal.Signals(signum).name}"
        assert cells.is_dir() and list(cells.iterdir()) == []  # neither the stage nor a half cell


def test_a_signal_during_export_leaves_no_staging(tmp_path: Path) -> None:
    """SIGTERM during `campaign export` left its `.campaign=x.*` stage beside the dataset."""
    camp, cell = _campaign(tmp_path)
    doc = json.loads(cell.read_text())
    doc["kernels"] *= 4_000  # a large cell: about a second to write as Parquet, the stage on disk all the while
    cell.write_text(json.dumps(doc))
    out = tmp_path / "pq"
    with signal_attempt():
        code, err = stopped_when(["campaign", "export", *camp, "--parquet", str(out)], lambda: bool(_hidden(out)),
                                 signal.SIGTERM)
        assert code == 143, err
        assert list(out.iterdir()) == []


def test_ctrl_c_in_a_held_block_is_raised_at_its_end() -> None:
    """Ctrl-C inside signals_held (a temp made and not yet recorded for cleanup; the pool starting a
    worker not yet sent its start-up data, which printed an EOFError traceback) waits for the
    block's end, as SIGTERM does; outside one it is KeyboardInterrupt at once."""
    script = ("import os, signal\n"
              "from kernelscope.errors import signals_held, signals_interrupt\n"
              "seen = []\n"
              "with signals_interrupt():\n"
              "    try:\n"
              "        with signals_held():\n"
              "            os.kill(os.getpid(), signal.SIGINT)\n"
              "            seen.append('held')\n"
              "    except KeyboardInterrupt:\n"
              "        seen.append('raised at the end')\n"
              "    try:\n"
              "        os.kill(os.getpid(), signal.SIGINT)\n"
              "        seen.append('not raised')\n"
              "    except KeyboardInterrupt:\n"
              "        seen.append('raised at once')\n"
              "print(seen, signal.getsignal(signal.SIGINT) is signal.default_int_handler)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.stdout.split("\n")[0] == "['held', 'raised at the end', 'raised at once'] True", out.stderr


def test_a_signal_during_analyze_out_dir_leaves_no_temp_file(tmp_path: Path, big_csv: Path) -> None:
    """The streamed documents are written under temp names as the launches come: a SIGTERM
    removes them, and the directory made for them."""
    out = tmp_path / "results"
    with signal_attempt():
        code, err = stopped_when(["analyze", str(big_csv), "--out-dir", str(out), "--jobs", "1"],
                                 lambda: bool(_hidden(out)), signal.SIGTERM)
        assert code == 143, err
        assert not out.exists(), list(out.iterdir())
