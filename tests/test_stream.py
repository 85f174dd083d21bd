"""Large inputs read in parts by worker processes (report/stream.py, ingest/parts.py): the streamed
documents are byte for byte the one-process documents, whatever the parts; a part the workers
cannot read strictly is read here with the rest of the file, and an error in it reads as a
whole-file read words it. Real worker processes, real ncu exports (tests/fixtures)."""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import replace
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelscope import app, columns
from kernelscope.analysis.groups import Tally
from kernelscope.analysis.pipeline import analyze
from kernelscope.cli import main
from kernelscope.columns import flatten, kernel_object
from kernelscope.errors import InputError
from kernelscope.ingest import parts
from kernelscope.ingest.parts import CsvSplit, ReportSplit, split
from kernelscope.report import stream
from kernelscope.report.csv_fields import inert
from kernelscope.report.table import Col, Table, render_csv
from kernelscope.report.writers import csv_line, dumps, to_json_and_csv

BENCH_REPORT = Path(__file__).resolve().parents[1] / "bench" / "data" / "many.ncu-rep.gz"
PART = 40_000  # bytes: three or four launches of a full raw export a part


def export(fx: Path, dst: Path, rows: int = 30, edit: dict[int, tuple[str, str]] | None = None) -> Path:
    """A raw export of `rows` launches from the real fixture rows: three kernels in turn, durations
    varied so that ties and longest launches fall in different parts; `edit`: row -> (column, text)."""
    header, units, *found = [r for f in ("gemm_bf16-raw.csv", "decode_gemm-raw.csv")
                             for r in csv.reader((fx / f).open(newline=""))][:3]
    at = {h: i for i, h in enumerate(header)}
    out = []
    for i in range(rows):
        row = list(found[0])
        row[at["ID"]] = str(i)
        row[at["Kernel Name"]] = f"kernel_{i % 3}"
        t = at["gpu__time_duration.sum"]
        row[t] = f"{float(row[t].replace(',', '')) * (1 + i % 4):,.3f}"
        column, text = (edit or {}).get(i, ("ID", str(i)))
        row[at[column]] = text
        out.append(row)
    with dst.open("w", newline="") as fh:
        csv.writer(fh, quoting=csv.QUOTE_ALL, lineterminator="\r\n").writerows([header, units, *out])
    return dst


@pytest.fixture(scope="module")
def big(fx: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A raw export of 12,000 launches (~145 MB, 18 parts: seconds of work on 2 cores; 3 s to write), written
    once for the runs that are stopped or lose a worker mid-way: none of them changes it."""
    return export(fx, tmp_path_factory.mktemp("big") / "big.csv", rows=12_000)


def documents(path: Path, jobs: int) -> tuple[bytes, bytes]:
    """The JSON and CSV documents of `path` (the JSON's run time taken out)."""
    out = []
    for fmt in ("json", "csv"):
        _, spool = app.stream_results(app.AnalyzeRequest((path,)), None, fmt, jobs)
        assert spool is not None
        with spool:
            out.append(re.sub(rb'"analyzed_at":"[^"]*"', b"", spool.read()))
    return out[0], out[1]


def refused(path: Path, jobs: int) -> str:
    """The one-line error reading `path` gives."""
    with pytest.raises(InputError) as caught:
        documents(path, jobs)
    return str(caught.value)


@pytest.fixture
def small_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stream, "PART_BYTES", PART)


def test_parts_give_the_one_process_documents(fx: Path, tmp_path: Path, small_parts: None) -> None:
    path = export(fx, tmp_path / "raw.csv")
    cut = split(path, PART, 2)
    assert isinstance(cut, CsvSplit) and cut.parts >= 8
    assert documents(path, 2) == documents(path, 1)
    kernels = [a.record for a in analyze(path)[0]]
    assert [k.launch_id for k in kernels] == list(range(30)) and kernels[29].name == "kernel_2"


def test_a_record_over_lines_is_read_here_with_the_rest(fx: Path, tmp_path: Path, small_parts: None) -> None:
    """A kernel name with a quote and one with a newline in a later part: the workers' strict read
    gives way, and the rest of the file is read here, as a whole-file read gives it."""
    path = export(fx, tmp_path / "odd.csv", edit={17: ("Kernel Name", 'say "hi"'), 23: ("Kernel Name", "two\nlines")})
    json_doc, csv_doc = documents(path, 2)
    assert (json_doc, csv_doc) == documents(path, 1)
    assert b'"name_full":"say \\"hi\\""' in json_doc and b'"name_full":"two\\nlines"' in json_doc


def test_a_bad_row_in_a_late_part_is_the_whole_read_error(fx: Path, tmp_path: Path, small_parts: None) -> None:
    path = export(fx, tmp_path / "bad.csv")
    lines = path.read_bytes().split(b"\r\n")
    lines[27] = lines[27].rsplit(b",", 1)[0]  # launch 25 loses a field
    path.write_bytes(b"\r\n".join(lines))
    errors = [refused(path, jobs) for jobs in (1, 2)]
    assert errors[0] == errors[1] and "line 28 has 1477 fields, the header has 1478" in errors[0]


@pytest.mark.parametrize(("first", "again"), [(1, 2), (1, 25)])  # rows in one part; in a later part
def test_a_launch_id_again_is_the_whole_read_error(fx: Path, tmp_path: Path, small_parts: None, first: int,
                                                   again: int) -> None:
    """A launch row given twice (its ID again) was read as two launches; one export numbers each
    launch once. Refused naming the line (row i is line i + 3), in parts as in one process."""
    path = export(fx, tmp_path / "twice.csv", edit={again: ("ID", str(first))})
    errors = [refused(path, jobs) for jobs in (1, 2)]
    assert errors[0] == errors[1] and f"line {again + 3}: launch ID {first} again" in errors[0], errors


def test_a_report_read_in_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """300 launches of a real report, one part a job: launch numbers and every figure as one read."""
    path = tmp_path / "many.ncu-rep"
    path.write_bytes(gzip.decompress(BENCH_REPORT.read_bytes()))
    assert split(path, PART, 2) is None  # under two parts of parts.REPORT_PART launches: read here
    monkeypatch.setattr(parts, "REPORT_PART", 100)
    cut = split(path, PART, 2)
    assert isinstance(cut, ReportSplit) and cut.bounds == [0, 150, 300]
    assert [r.launch_id for r in cut.read_part(1)][:2] == [150, 151]
    assert documents(path, 2) == documents(path, 1)


def test_small_or_packed_inputs_are_read_here(fx: Path, tmp_path: Path) -> None:
    assert split(fx / "gemm_bf16-raw.csv", PART, 2) is None  # under two parts
    assert split(fx / "decode_gemm-details.csv", 1000, 2) is None  # the long page: one launch spans rows
    assert split(fx / "gemm_bf16.ncu-rep", PART, 2) is None  # one launch
    assert split(fx / "tiny.ncu-rep.gz", PART, 2) is None  # gzip: expanded and read here


def test_tallies_merged_are_the_tally_of_every_launch(fx: Path, tmp_path: Path) -> None:
    items = analyze(export(fx, tmp_path / "raw.csv"))[0]
    whole = Tally()
    for a in items:
        whole.add(a)
    for cut in (1, 7, 13, 29):
        first, rest = Tally(), Tally()
        for a in items[:cut]:
            first.add(a)
        for a in items[cut:]:
            rest.add(a)
        first.merge(rest)
        assert first.summaries() == whole.summaries()
    assert [s.launches for s in whole.summaries()] == [10, 10, 10]


def _marked(mark: str) -> list[int]:
    """PIDs of the live processes whose environment holds `mark`."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and mark.encode() in (proc / "environ").read_bytes() \
                    and b"\nState:\tZ" not in (proc / "status").read_bytes():
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # it ended meanwhile
        return b""


def analyzing(path: Path) -> tuple[str, subprocess.Popen[bytes]]:
    """`analyze --jobs 2` of `path` in its own process, and the environment mark its workers inherit
    (_marked finds them by it)."""
    mark = f"KS_TEST_{uuid.uuid4().hex}"
    return mark, subprocess.Popen([sys.executable, "-m", "kernelscope.cli", "analyze", str(path), "--format", "json",
                                   "--jobs", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  env={**os.environ, mark: "1"})


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_stopped_run_leaves_no_worker(big: Path, sig: signal.Signals) -> None:
    """`timeout` (SIGTERM) shuts the pool down and exits 143 with nothing written; SIGKILL leaves
    workers without a parent, and they exit on their own."""
    mark, proc = analyzing(big)
    deadline = time.monotonic() + 30
    while len(_marked(mark)) < 3 and time.monotonic() < deadline:  # this run and two workers
        time.sleep(0.05)
    assert len(_marked(mark)) >= 3, "the workers never started"
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    deadline = time.monotonic() + 5
    while _marked(mark) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _marked(mark) == []
    assert out == b""
    if sig == signal.SIGTERM:
        assert proc.returncode == 143 and "kernelscope: stopped by SIGTERM" in err.decode(), err.decode()[-2000:]


MUTATIONS = [b"\"", b"\n", b"\r", b"\x00", b"\xff\xfe", b"\",\"", b"", b"1,2", b"\"\"", b"\r\n", b"n/a", b"\xc3"]


@pytest.mark.parametrize("seed", range(len(MUTATIONS)))
def test_a_damaged_export_reads_the_same_in_parts(fx: Path, tmp_path: Path, small_parts: None, seed: int) -> None:
    """Bytes put in, or taken out, anywhere in the launch rows: parts give what one process
    gives, the same documents or the same one-line error."""
    path = export(fx, tmp_path / "damaged.csv", rows=24)
    data = path.read_bytes()
    rng = random.Random(seed)
    start = data.index(b"\n", data.index(b"\n") + 1) + 1  # after the units row
    at = rng.randrange(start + PART, len(data) - 10)  # past the first part
    cut = rng.randrange(0, 4)
    path.write_bytes(data[:at] + MUTATIONS[seed] + data[at + cut:])
    outcomes = []
    for jobs in (1, 2):
        try:
            outcomes.append(documents(path, jobs))
        except InputError as exc:
            outcomes.append(str(exc))
    assert outcomes[0] == outcomes[1]


def _as_written(value: object) -> str:
    return "" if value is None else str(value)


def test_csv_has_the_spec_columns_for_every_kernel(fx: Path, sets_dir: Path) -> None:
    """Kernels of other metric sets (ncu's own roofline set: figures from other sources, fp16 bounded),
    a runner-up or none, a harness op's analytic work and measured ceilings: every key of every map is
    one of the spec's, the header is FLAT whatever the inputs, and each field reads back as its value
    (a number exactly)."""
    paths = [fx / "gemm_basic.ncu-rep", fx / "gemm_bf16.ncu-rep", fx / "attention_cudnn.ncu-rep",
             fx / "bundle_attn_causal", sets_dir / "ncu_roofline-torch.ncu-rep"]
    items = (analyze(paths, hw="h200-sxm", achievable=fx / "measured-ceilings-h200.yaml")[0]
             + analyze(fx / "decode_gemm-details.csv", hw="h200-sxm")[0])  # no device named: no measured ceilings
    objs = [kernel_object(a) for a in items]
    for c in columns.COLUMNS:
        if c.kind == "map":
            keys = {k for o in objs if o[c.name] is not None for k in o[c.name]}
            assert keys and keys <= {k for k, _ in c.keys}, c.name
    text = to_json_and_csv(items, {})[1].decode()
    header, *rows = csv.reader(io.StringIO(text, newline=""))
    assert tuple(header) == columns.FLAT and len(rows) == len(objs)
    for obj, row in zip(objs, rows, strict=True):
        flat = flatten(obj)
        assert tuple(flat) == columns.FLAT
        for (name, value), field in zip(flat.items(), row, strict=True):
            assert (float(field) == value) if type(value) is float else field == _as_written(value), name


TEXT = st.text(alphabet=st.sampled_from('ab,"\\\r\n\t\x00 nultrefas|é€\u2028=+-@'))
VALUES = st.one_of(st.none(), st.booleans(), st.integers(-(2 ** 70), 2 ** 70),
                   st.floats(allow_nan=False, allow_infinity=False), TEXT,
                   st.sampled_from(["null", "true", "false", "a,null,b", " | "]))


@settings(max_examples=300, deadline=None)
@given(st.lists(VALUES, min_size=2))
def test_csv_line_reads_back_as_the_values(values: list[object]) -> None:
    """Any row the fast path writes (or hands to the csv module) reads back field for field: text
    holding quotes, commas, line ends, backslashes or the words null/true/false, numbers exactly
    (rows of two fields or more, as a kernel's row is)."""
    back = next(csv.reader(io.StringIO(csv_line(values).decode(), newline="")))
    for value, field in zip(values, back, strict=True):
        assert (float(field) == value) if type(value) is float else field == _as_written(inert(value))


@pytest.mark.parametrize("name", ["=HYPERLINK(\"http://x\",\"y\")", "@SUM(A1)", "+1", "-cmd", "\tx"])
def test_csv_names_that_start_as_formulas_stay_text(fx: Path, name: str) -> None:
    """A crafted kernel name a spreadsheet would run (CSV injection) reads as text with a leading
    apostrophe, in kernels.csv and in every table's CSV; JSON keeps the name as it is."""
    items = analyze(fx / "gemm_bf16.ncu-rep", hw="h200-sxm")[0]
    odd = [replace(a, record=replace(a.record, name=name, name_full=name)) for a in items]
    as_json, as_csv = to_json_and_csv(odd, {})
    (row,) = csv.DictReader(io.StringIO(as_csv.decode(), newline=""))
    assert row["name"] == row["name_full"] == "'" + name and json.loads(as_json)["kernels"][0]["name"] == name
    table = render_csv(Table((Col("name", "name"), Col("n", "n")), [(name, -1.5)]))
    assert list(csv.reader(io.StringIO(table, newline="")))[1] == ["'" + name, "-1.5"]


def test_csv_line_writes_a_row_the_same_either_way() -> None:
    """The fast path and the field-at-a-time one (a quote in a name) write numbers as the JSON does,
    a non-finite one empty as null, and text quoted, so empty text is not an empty field."""
    row = [1e-7, 1e16, 0.1, float("nan"), float("inf"), None, False, "", "1.5"]
    fast, slow = (csv_line([name, *row]).split(b",", 1)[1] for name in ("plain", 'a "quoted" name'))
    assert fast == slow == b",".join([orjson.dumps(v) for v in row[:3]] + [b"", b"", b"", b"False", b'""',
                                                                            b'"1.5"\r\n'])


def test_a_name_with_an_undecodable_byte_is_written() -> None:
    """A path's byte that is not UTF-8 reaches `source` as a lone surrogate (Python's file names),
    which orjson refuses: the JSON escapes it, the CSV writes '?', neither stops the run."""
    obj = {"source": "run-\udcff.csv", "n": 2 ** 70, "name": "é"}
    assert json.loads(dumps(obj)) == obj
    assert csv_line(["run-\udcff.csv", 1.0]) == b'"run-?.csv",1.0\r\n'


V2_ROOT, V1_ROOT = "0::/\n", "5:cpu,cpuacct:/\n1:name=systemd:/\n"


@pytest.mark.parametrize(("files", "membership", "quota"), [
    ({"cpu.max": "250000 100000\n"}, V2_ROOT, 3),  # cgroup v2, a container's own namespace: 2.5 CPUs
    ({"cpu.max": "max 100000\n"}, V2_ROOT, None),
    ({"app.slice/cpu.max": "150000 100000\n", "app.slice/run/cpu.max": "max 100000\n"},
     "0::/app.slice/run\n", 2),  # a systemd slice above the process sets it
    ({"kube/pod/cpu.max": "400000 100000\n", "kube/pod/c1/cpu.max": "200000 100000\n"}, "0::/kube/pod/c1\n", 2),
    ({"cpu/cpu.cfs_quota_us": "200000\n", "cpu/cpu.cfs_period_us": "100000\n"}, V1_ROOT, 2),  # cgroup v1
    ({"cpu/docker/x/cpu.cfs_quota_us": "50000\n", "cpu/docker/x/cpu.cfs_period_us": "100000\n"},
     "5:cpu,cpuacct:/docker/x\n", 1),
    ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, V1_ROOT, None),
    ({"cpu.max": "garbage"}, V2_ROOT, None),
    ({}, "0::/gone\n", None),
])
def test_default_jobs_keep_to_the_cgroup_quota(tmp_path: Path, files: dict[str, str], membership: str,
                                               quota: int | None) -> None:
    """A pod or slice limited to a few CPUs on a large node starts that many workers, not one a core."""
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert stream.cpu_quota(tmp_path, membership) == quota
    (tmp_path / "self-cgroup").write_text(membership)
    cpus = len(os.sched_getaffinity(0))
    assert stream.default_jobs(tmp_path, tmp_path / "self-cgroup") == min(cpus, quota or cpus, stream.MAX_JOBS)



@pytest.mark.parametrize("name", ['say "hi",\r\nthen\n"go"', "a\rb", "\n", " lead, trail "])
def test_csv_reads_back_every_name_as_written(fx: Path, name: str) -> None:
    """A name with a bare \\r once went out unquoted and split its row for every CSV reader."""
    items = analyze([fx / "gemm_bf16.ncu-rep", fx / "decode_gemm-details.csv"], hw="h200-sxm")[0]
    odd = [replace(a, record=replace(a.record, name=f"{name}{i}", name_full=f"{name}{i}\r"))
           for i, a in enumerate(items)]
    back = list(csv.DictReader(io.StringIO(to_json_and_csv(odd, {})[1].decode(), newline="")))
    assert [(r["name"], r["name_full"]) for r in back] == [(f"{name}{i}", f"{name}{i}\r") for i in range(len(odd))]


@pytest.mark.parametrize(("sig", "after"), [(signal.SIGKILL, 0.0), (signal.SIGKILL, 0.7), (signal.SIGTERM, 0.0),
                                            (signal.SIGSEGV, 0.7)])
def test_a_worker_killed_is_one_error(big: Path, sig: signal.Signals, after: float) -> None:
    """The OOM killer takes a worker, while it starts or mid-part, or it crashes: within seconds, one
    line naming the file and --jobs 1, nothing written, no process left (on Python 3.11.2 the old
    concurrent.futures pool waited for ever on a worker killed at start-up)."""
    mark, proc = analyzing(big)
    deadline = time.monotonic() + 30
    workers: list[int] = []
    while not workers and time.monotonic() < deadline:
        workers = [p for p in _marked(mark) if b"spawn_main" in _cmdline(p)]
        time.sleep(0.05)
    assert workers, "no worker started"
    time.sleep(after)
    os.kill(workers[0], sig)
    t0 = time.monotonic()
    out, err = proc.communicate(timeout=60)
    assert time.monotonic() - t0 < 15
    assert proc.returncode == 2 and out == b"", err.decode()[-2000:]
    assert err.decode().strip().splitlines()[-1] == (f"kernelscope: error: {big}: a worker process reading it died "
                                                      "(out of memory, or killed); --jobs 1 reads it in this process")
    deadline = time.monotonic() + 5
    while _marked(mark) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _marked(mark) == []


@pytest.mark.parametrize("shift", range(-3, 3))
def test_line_ends_cut_by_a_block_are_counted_once(tmp_path: Path, shift: int) -> None:
    """\\r\\r\\n (a CRLF file through Windows text mode) across the counter's 1 MiB blocks: the
    line numbers of read_from are the text reader's."""
    data = b"a" * ((1 << 20) - 2 + shift) + b"\r\r\n" + b"x\r\n" * 3
    path = tmp_path / "crcr.csv"
    path.write_bytes(data)
    with path.open("rb") as fh:
        assert parts._lines(fh, len(data)) == len(io.TextIOWrapper(io.BytesIO(data), newline="").readlines()) == 5


def test_bad_utf8_near_a_bad_row_is_the_same_error(fx: Path, tmp_path: Path, small_parts: None) -> None:
    """Bad UTF-8 is refused a line at a time, so which error comes first does not hang on where
    the decoder's chunks fall (a part's start, or the file's)."""
    path = export(fx, tmp_path / "utf.csv")
    lines = path.read_bytes().split(b"\r\n")
    lines[20] = lines[20].rsplit(b",", 1)[0]  # line 21 loses a field
    lines[21] = lines[21][:1455] + b"\xff" + lines[21][1456:]  # and the next line holds a byte that is not UTF-8
    path.write_bytes(b"\r\n".join(lines))
    errors = [refused(path, jobs) for jobs in (1, 2)]
    assert errors[0] == errors[1] and errors[0].endswith("line 21 has 1477 fields, the header has 1478")
    lines[20] = lines[20] + b',""'
    path.write_bytes(b"\r\n".join(lines))
    with pytest.raises(InputError, match=r"line 22: CSV is not UTF-8 text \(invalid start byte\)"):
        documents(path, 2)


def test_csv_to_a_text_stdout_keeps_its_line_ends(fx: Path, tmp_path: Path) -> None:
    """stdout without a byte buffer (an embedding host, a test): CRLF rows and a \\r in a name
    come through as written."""
    path = export(fx, tmp_path / "cr.csv", rows=3, edit={1: ("Kernel Name", "a\rb")})
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["analyze", str(path), "--format", "csv"]) == 0
    text = out.getvalue()
    assert text.count("\r\n") == 4
    assert [r["name_full"] for r in csv.DictReader(io.StringIO(text, newline=""))] == ["kernel_0", "a\rb", "kernel_2"]


@pytest.mark.parametrize("after", [0.02, 0.05])
def test_ctrl_c_while_workers_start_is_one_line(fx: Path, tmp_path: Path, after: float) -> None:
    """Ctrl-C reaches the terminal's whole process group, workers still importing included (20-80 ms
    after one appears, here): they hold it blocked until they ignore it, so none prints a traceback."""
    path = export(fx, tmp_path / "big.csv", rows=6000)
    mark = f"KS_TEST_{uuid.uuid4().hex}"
    proc = subprocess.Popen([sys.executable, "-m", "kernelscope.cli", "analyze", str(path), "--format", "json",
                             "--jobs", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            env={**os.environ, mark: "1"})
    deadline = time.monotonic() + 30
    while not any(b"spawn_main" in _cmdline(p) for p in _marked(mark)) and time.monotonic() < deadline:
        time.sleep(0.002)
    time.sleep(after)
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert (proc.returncode, out, err.decode().strip().splitlines()[-1:]) == (130, b"", ["kernelscope: interrupted"])
    assert "Traceback" not in err.decode(), err.decode()[-2000:]
