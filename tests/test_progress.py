"""Progress on stderr for long work (report/progress.py): each file's launches read of the total a
report gives (parts of a CSV read in parts), with the time left at the pace so far; stdout stays
the document. Real reports, real worker processes."""

from __future__ import annotations

import gzip
import io
import json
import re
import shutil
from pathlib import Path

import pytest

from kernelscope import app
from kernelscope.cli import main
from kernelscope.ingest import parts
from kernelscope.report import progress, stream
from kernelscope.report.progress import Step, Ticker, status_line
from test_stream import PART, export

MANY = Path(__file__).resolve().parents[1] / "bench" / "data" / "many.ncu-rep.gz"


class Recorded:
    """A Steps that keeps every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int | None, int | None, str]] = []

    def __call__(self, what: str, done: int | None = None, total: int | None = None, unit: str = "launches") -> None:
        self.calls.append((what, done, total, unit))

    def of(self, what: str) -> list[tuple[int | None, int | None, str]]:
        return [(d, t, u) for w, d, t, u in self.calls if w == what]


def test_the_line_says_done_of_total_and_the_time_left() -> None:
    """At 100 of 300 launches after 10 s of this step, 200 more take 20 s at that pace."""
    step = Step("reading many.ncu-rep.gz", 100, 300, "launches", since=5.0, first=0)
    assert status_line(step, now=15.0, elapsed=12.4) == \
        "kernelscope: reading many.ncu-rep.gz … 100/300 launches, 12 s, ETA 20 s"
    assert status_line(step._replace(done=1_500, total=None), 15.0, 12.0) == \
        "kernelscope: reading many.ncu-rep.gz … 1,500 launches, 12 s"  # a CSV's total is unknown: no ETA
    assert status_line(Step("reading big.csv", 3, 12, "parts", 0.0, 0), 30.0, 150.0) == \
        "kernelscope: reading big.csv … 3/12 parts, 2 min 30 s, ETA 90 s"
    assert status_line(step._replace(done=None, total=None), 15.0, 3.0) == "kernelscope: reading many.ncu-rep.gz … 3 s"
    assert "ETA" not in status_line(step._replace(first=100), 15.0, 12.0)  # nothing counted yet at this pace


def test_a_report_is_counted_launch_by_launch_of_its_total() -> None:
    seen = Recorded()
    an = app.analyze(app.AnalyzeRequest((MANY,)), seen)
    steps = seen.of("reading many.ncu-rep.gz")
    assert steps[0] == (None, None, "launches")  # named before the report is open
    assert steps[1:] == [(n, 300, "launches") for n in range(1, 301)] and len(an.items) == 300


def test_a_csv_is_counted_without_a_total_and_each_file_is_named(fx: Path) -> None:
    seen = Recorded()
    app.analyze(app.AnalyzeRequest((fx / "decode_gemm-raw.csv", fx / "gemm_bf16.ncu-rep")), seen)
    assert seen.of("reading decode_gemm-raw.csv (file 1 of 2)")[1:] == [(1, None, "launches")]
    assert seen.of("reading gemm_bf16.ncu-rep (file 2 of 2)")[1:] == [(1, 1, "launches")]


def test_parts_read_by_workers_are_counted(fx: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A report in two parts: launches of its total as each part is written; a raw CSV in parts: parts."""
    report = tmp_path / "many.ncu-rep"
    report.write_bytes(gzip.decompress(MANY.read_bytes()))
    monkeypatch.setattr(parts, "REPORT_PART", 100)
    seen = Recorded()
    app.stream_results(app.AnalyzeRequest((report,)), None, "json", 2, seen)
    assert seen.of("reading many.ncu-rep") == [(0, 300, "launches"), (150, 300, "launches"), (300, 300, "launches")]
    monkeypatch.setattr(stream, "PART_BYTES", PART)
    raw = export(fx, tmp_path / "raw.csv")
    cut = parts.split(raw, PART, 2)
    assert isinstance(cut, parts.CsvSplit)
    seen = Recorded()
    app.stream_results(app.AnalyzeRequest((raw,)), None, "csv", 2, seen)
    assert seen.of("reading raw.csv") == [(i, cut.parts, "parts") for i in range(cut.parts + 1)]


def fresh(tmp_path: Path) -> Path:
    """The report under a new name: a report read before in this process is kept loaded
    (ingest/ncu_rep.py) and would read too fast for a ticker's first line."""
    copy = tmp_path / MANY.name
    shutil.copyfile(MANY, copy)
    return copy


def test_the_ticker_writes_only_its_stream_past_its_delay(tmp_path: Path) -> None:
    out = io.StringIO()
    with Ticker(out, after=0.0, every=60.0) as tick:
        app.analyze(app.AnalyzeRequest((fresh(tmp_path),)), tick.step)
    lines = out.getvalue().splitlines()
    said = (r"kernelscope: (reading and judging 1 input\(s\)( … \d+ s)?|reading many\.ncu-rep\.gz … "
            r"(\d+/300 launches, )?\d+ s(, ETA \d+ s)?)")
    assert lines and all(re.fullmatch(said, line) for line in lines), lines


def test_stdout_stays_the_document(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                   tmp_path: Path) -> None:
    """The CLI's ticker, with no delay: progress on stderr, the JSON document alone on stdout."""
    monkeypatch.setattr(progress.Ticker.__init__, "__defaults__", (0.0, 0.05))
    assert main(["analyze", str(fresh(tmp_path)), "--format", "json", "--jobs", "1"]) == 0
    out, err = capsys.readouterr()
    assert len(json.loads(out)["kernels"]) == 300
    assert re.search(r"kernelscope: reading many\.ncu-rep\.gz … \d+/300 launches, \d+ s", err), err
