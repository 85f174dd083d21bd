"""Data lost with exit 0 (issue 18): a report is read whole or refused. Real files cut, joined and
edited: a report cut at every one of its block boundaries, a raw CSV cut inside its last line (one
process or parts over workers), a details page whose launch ID is given to two kernels, exports
joined with `cat`, and unit cells ncu does not write. Each ends handled with every launch, or as
one clean error naming the file and what is wrong; hostile.py counts them under KLASS."""

from __future__ import annotations

import csv
import gzip
import json
import os
import re
import shutil
import struct
from pathlib import Path

import ncu_report
import pytest

from conftest import raw_csv_variant
from hostile import LAST_ERROR, api, cli
from kernelscope import load
from kernelscope.ingest import ncu_rep, read_file
from kernelscope.ingest.detect import blocks
from kernelscope.ingest.units import unit_factor
from kernelscope.manifest import sha256_file
from kernelscope.report import stream

KLASS = "data lost: truncated, merged, unknown units"
FX = Path(__file__).parent / "fixtures"
MANY = Path(__file__).resolve().parents[1] / "bench" / "data" / "many.ncu-rep.gz"
RAWS = ("gemm_bf16-raw.csv", "decode_gemm-raw.csv")
DETAILS = FX / "decode_gemm-details.csv"


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("many") / "many.ncu-rep"
    path.write_bytes(gzip.decompress(MANY.read_bytes()))
    return path


def item_ends(data: bytes) -> list[int]:
    """Where each length-prefixed item of a report ends (the file header, every block header and
    every entry of a payload: each is a u32 size and that many bytes), counted without reading any."""
    at = 8 + struct.unpack("<I", data[4:8])[0]
    ends = [at]
    while at + 4 <= len(data):
        at += 4 + struct.unpack("<I", data[at:at + 4])[0]
        ends.append(at)
    assert ends[-1] == len(data)
    return ends


def outcome(path: Path) -> tuple[str, int | None]:
    """Reading a report: ('clean', None), or ('handled', its launches). The launches are counted as
    the read counts them, after the same checks, without reading each (the sweep reads 300 cuts)."""
    found: list[int] = []

    def count() -> None:
        launches = ncu_rep.launches(path)
        if not launches:
            load(path)  # a report of no launch: the read refuses it
        found.append(launches)

    return api(count, klass=KLASS), (found[0] if found else None)


def test_a_report_cut_at_every_block_boundary_is_whole_or_refused(many: Path, tmp_path: Path) -> None:
    """Cut at each of the 623 ends of an item of a 300-launch report (and at 0, 4 and 8 bytes). ncu
    records no launch count and no closing block, so only a cut between two whole blocks after ncu's
    session details, the last of them not a kernel's code, reads as a shorter report; there it reads
    exactly the launches kept, and every other cut is one clean error. Before, 312 of the 626 cuts
    read as a shorter report, 309 as one of no launch ("holds no profiled kernel launches") and 4
    were refused as cut; now 300 read as a shorter report, each one ncu itself could have written: the
    cut after the target system's details and before ncu's command line is whole as ncu 2020-2022.1
    wrote its reports (they record no command line, issue 27)."""
    data = many.read_bytes()
    with many.open("rb") as fh:
        whole_blocks = list(blocks(fh, str(many)))
    session_at = next(b.end for b in whole_blocks if b.whole_session)
    kept = {b.end: sum(x.results for x in whole_blocks if x.end <= b.end) for b in whole_blocks
            if b.end >= session_at and not (b.sources and not b.results)}  # a report ncu could have written
    cut = tmp_path / "cut.ncu-rep"
    shutil.copy(many, cut)
    outcomes = {"clean": 0, "handled": 0}
    for end in sorted({0, 4, 8, *item_ends(data)}, reverse=True):
        os.truncate(cut, end)
        found = outcome(cut)
        outcomes[found[0]] += 1
        assert found == (("handled", kept[end]) if end in kept else ("clean", None)), (end, LAST_ERROR)
    assert kept[len(data)] == 300 and len(kept) == 301 and outcomes == {"clean": 325, "handled": 301}


@pytest.mark.parametrize("end", [196, 615964, 629927, 649978, 4377337, 25197912])
def test_a_cut_report_is_one_error_through_the_cli(many: Path, tmp_path: Path, end: int) -> None:
    """Cuts the last sweep refuses, read through the CLI: one error line naming the file. Before,
    the cut after the first launch (649,978) read as 1 launch, and one just before the last launch's
    payload (25,197,912) read as no launch at all ("holds no profiled kernel launches")."""
    cut = tmp_path / "cut.ncu-rep"
    cut.write_bytes(many.read_bytes()[:end])
    assert cli(["analyze", str(cut), "--format", "json"], klass=KLASS) == "clean"
    assert str(cut) in LAST_ERROR[0] and "truncated or corrupt .ncu-rep" in LAST_ERROR[0], LAST_ERROR[0]


def test_launches_ncu_report_drops_are_refused(many: Path, tmp_path: Path) -> None:
    """A source entry damaged in its first bytes: ncu_report reads none of the 300 launches the
    blocks hold, without complaint; the count the blocks declare tells."""
    data = bytearray(many.read_bytes())
    with many.open("rb") as fh:
        first_code = next(b for b in blocks(fh, str(many)) if b.sources)
    ends = item_ends(bytes(data))
    start = ends[ends.index(first_code.end) - 1]  # its one entry: a u32 size, then the source's message
    data[start + 4] ^= 0xFF
    bad = tmp_path / "damaged.ncu-rep"
    bad.write_bytes(data)
    context = ncu_report.load_report(str(bad))
    assert sum(context.range_by_idx(r).num_actions() for r in range(context.num_ranges())) == 0
    assert cli(["analyze", str(bad), "--format", "json"], klass=KLASS) == "clean"
    assert "ncu_report reads 0 of the 300 launches the file's blocks hold" in LAST_ERROR[0]


def test_a_block_that_counts_more_entries_is_refused_before_ncu_report_aborts(many: Path, tmp_path: Path) -> None:
    """A result block whose header counts 2 results over a payload of 1: ncu_report kills the whole
    process (a failed CHECK, SIGABRT); the framing refuses it first."""
    data = many.read_bytes()
    with many.open("rb") as fh:
        found = list(blocks(fh, str(many)))
    at = found[199].end  # block 201 starts here
    size = struct.unpack("<I", data[at:at + 4])[0]
    header = data[at + 4:at + 4 + size]
    assert header.startswith(b"\x08\x00\x10\x01")  # NumSources 0, NumResults 1
    bad = tmp_path / "counts.ncu-rep"
    bad.write_bytes(data[:at + 4] + b"\x08\x00\x10\x02" + header[4:] + data[at + 4 + size:])
    assert cli(["analyze", str(bad), "--format", "json"], klass=KLASS) == "clean"
    assert "block 201 does not hold the 2 entries its header counts" in LAST_ERROR[0]


def test_a_bundle_report_cut_between_launches_is_refused(many: Path, tmp_path: Path) -> None:
    """The one cut a lone report cannot show: between two whole launches. In a bundle the manifest
    holds the report's sha256 from the capture, and a copy cut there differs from it."""
    bundle = tmp_path / "bundle"
    shutil.copytree(FX / "bundle_attn_causal", bundle)
    manifest = json.loads((bundle / "manifest.json").read_text())
    report = manifest["reports"][0]
    shutil.copy(many, bundle / report)  # a bundle of 300 launches, its manifest made to match
    manifest["artifacts_sha256"][report] = sha256_file(bundle / report)
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    assert len(load(bundle)) == 300
    with many.open("rb") as fh:
        launch_151 = [b for b in blocks(fh, str(many)) if b.results][150]
    os.truncate(bundle / report, launch_151.end)
    assert ncu_rep.launches(bundle / report) == 151  # read alone: a whole report of 151 launches
    assert cli(["analyze", str(bundle), "--format", "json"], klass=KLASS) == "clean"
    assert "is not the report its bundle's manifest recorded at capture (its sha256 differs)" in LAST_ERROR[0]


def lf_export(dst: Path, copies: int) -> Path:
    """A raw export of `copies` times the real fixture rows, with ncu's own line ends (\\n)."""
    raw_csv_variant(FX / RAWS[0], dst, copies=copies)
    dst.write_bytes(dst.read_bytes().replace(b"\r\n", b"\n"))
    return dst


def cut_points(line: bytes, start: int) -> list[int]:
    """Offsets into the file at which to cut its last line `line` (starting at `start`): inside its
    first and last field, just after a field's closing quote and after its delimiter, and mid-field."""
    quotes = [m.start() for m in re.finditer(b'"', line)]
    picks = [1, 3, quotes[1] + 1, quotes[2], quotes[len(quotes) // 2] + 2, len(line) - 4, len(line) - 2,
             len(line) - 1]
    return [start + p for p in picks]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_raw_csv_cut_inside_a_line_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: str) -> None:
    """Cut inside its last line, one process or parts over workers: one error, never the launches
    before the cut (before: a cut in the last field read every launch, that one with its last figure
    cut short, with exit 0). Cut at the line's end, the last launch is whole: all are read."""
    monkeypatch.setattr(stream, "PART_BYTES", 40_000)
    path = lf_export(tmp_path / "full.csv", copies=12)
    data = path.read_bytes()
    start = data.rindex(b"\n", 0, len(data) - 1) + 1
    cut = tmp_path / "cut.csv"
    for end in cut_points(data[start:-1], start):
        cut.write_bytes(data[:end])
        assert cli(["analyze", str(cut), "--format", "json", "--jobs", jobs], klass=KLASS) == "clean", end
        assert str(cut) in LAST_ERROR[0] and "line 14" in LAST_ERROR[0], LAST_ERROR[0]
    for end in (len(data) - 1, len(data)):  # without its last line end, or with it
        cut.write_bytes(data[:end])
        assert cli(["analyze", str(cut), "--format", "csv", "--jobs", jobs], klass=KLASS) == "handled"
        assert len(load(cut)) == 12


def test_a_large_raw_csv_cut_in_its_last_field_is_refused_in_parts(tmp_path: Path) -> None:
    """The issue's case: 2,000 launches (25 MB, four 8 MB parts), cut inside launch 1,482's last
    field: before, `--jobs 1` and `--jobs 2` both read 1,482 launches with exit 0."""
    data = lf_export(tmp_path / "big.csv", copies=2000).read_bytes()
    line_ends = [m.end() for m in re.finditer(b"\n", data)]
    cut = tmp_path / "cut.csv"
    cut.write_bytes(data[:line_ends[1483] - 4])  # lines 1, 2: header and units; the cut is in line 1,484
    for jobs in ("1", "2"):
        assert cli(["analyze", str(cut), "--format", "json", "--jobs", jobs], klass=KLASS) == "clean"
        assert "line 1484: the file ends inside a quoted field (it was cut short)" in LAST_ERROR[0]


def details_rows() -> list[list[str]]:
    return list(csv.reader(DETAILS.open(newline="")))


def write_csv(path: Path, rows: list[list[str]]) -> Path:
    with path.open("w", newline="") as fh:
        csv.writer(fh, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    return path


def renamed(rows: list[list[str]], column: str, value: str) -> list[list[str]]:
    at = details_rows()[0].index(column)
    return [[value if i == at else v for i, v in enumerate(r)] for r in rows]


@pytest.mark.parametrize(("case", "problem"), [
    ("another kernel, the same ID", "line 143: launch ID 0 holds a second kernel (its Kernel Name at line 2: "
                                    "'nvjet_sm90_tst_64x8_64x16_2x1_v_bz_NNT', here: 'other_kernel')"),
    ("the same kernel twice, one ID", "line 143: launch ID 0 gives 'dram__bytes_read.sum' twice"),
    ("an ID again after another", "line 284: launch ID 0 again, after other launches (its rows began at line 2)"),
    ("another grid, the same ID", "line 143: launch ID 0 holds a second kernel (its Grid Size at line 2: "),
    ("an ID that is no number", "line 143: the ID 'n/a' is not a launch number"),
])
def test_details_launches_sharing_an_id_are_refused(tmp_path: Path, case: str, problem: str) -> None:
    """Before, each read as one launch holding both kernels' figures (the last one's winning)."""
    header, *rows = details_rows()
    more = {"another kernel, the same ID": renamed(rows, "Kernel Name", "other_kernel"),
            "the same kernel twice, one ID": rows,
            "an ID again after another": renamed(rows, "ID", "1") + rows,
            "another grid, the same ID": renamed(rows, "Grid Size", "(4, 64, 1)"),
            "an ID that is no number": renamed(rows, "ID", "n/a")}[case]
    path = write_csv(tmp_path / "shared.csv", [header, *rows, *more])
    assert cli(["analyze", str(path), "--format", "json", "--hw", "h200-sxm"], klass=KLASS) == "clean"
    assert str(path) in LAST_ERROR[0] and problem in LAST_ERROR[0], LAST_ERROR[0]


def test_details_launches_with_their_own_ids_are_read(tmp_path: Path) -> None:
    header, *rows = details_rows()
    path = write_csv(tmp_path / "two.csv", [header, *rows, *renamed(rows, "ID", "1")])
    assert [k.launch_id for k in load(path)] == [0, 1]


@pytest.mark.parametrize("joined", ["raw + raw", "raw + raw, BOM", "details + details", "raw + units again"])
def test_exports_joined_with_cat_are_refused(tmp_path: Path, joined: str) -> None:
    """`cat a.csv b.csv`: before, the second header row read as a phantom kernel named
    "Kernel Name" (raw) or as launch "ID" (details)."""
    raw = [(FX / f).read_bytes() for f in RAWS]
    parts = {"raw + raw": raw, "raw + raw, BOM": [raw[0], b"\xef\xbb\xbf" + raw[1]],
             "details + details": [DETAILS.read_bytes()] * 2,
             "raw + units again": [raw[0], raw[1].split(b"\n", 1)[1]]}[joined]
    path = tmp_path / "joined.csv"
    path.write_bytes(b"".join(parts))
    assert cli(["analyze", str(path), "--format", "json", "--hw", "h200-sxm"], klass=KLASS) == "clean"
    problem = {"raw + units again": "line 4 names no kernel: a units row again (two exports joined into one file?)",
               "details + details": "line 143 is a header row again: two exports joined into one file?"}.get(
        joined, "line 4 is a header row again: two exports joined into one file?")
    assert f"{path}: {problem}" in LAST_ERROR[0], LAST_ERROR[0]


def raw_edited(tmp_path: Path, column: str, unit: str) -> Path:
    header, units, *rows = list(csv.reader((FX / RAWS[0]).open(newline="")))
    units[header.index(column)] = unit
    return write_csv(tmp_path / f"unit-{len(list(tmp_path.iterdir()))}.csv", [header, units, *rows])


def details_duration_in(tmp_path: Path, unit: str) -> Path:
    """The details page with its Duration rows' unit replaced by `unit`."""
    rows = details_rows()
    label = rows[0].index("Metric Name")
    for row in rows:
        if row[label] == "Duration":
            row[label + 1] = unit
    return write_csv(tmp_path / "details.csv", rows)


DURATION, READ = "gpu__time_duration.sum", "dram__bytes_read.sum"


@pytest.mark.parametrize(("column", "unit"), [(DURATION, "µs"), (DURATION, "minute"), (DURATION, "US"),
                                              (DURATION, "usec"), (READ, "kbyte"), (READ, "KB"), (READ, "GB"),
                                              (READ, "Kibyte"), (READ, "Mbyte/"), (READ, "byte/s/s")])
def test_an_unknown_unit_on_a_figure_read_is_refused(tmp_path: Path, column: str, unit: str) -> None:
    """Before, each was read as the base unit: the GEMM's 338 µs as 338 ns (82,124 % of the compute
    ceiling, 20,344 % of HBM's), its 302 MB read from DRAM as 302 bytes. Left unmeasured, the figure
    would change the verdict as silently, so it is an error naming the file, the column and the unit."""
    path = raw_edited(tmp_path, column, unit)
    assert cli(["analyze", str(path), "--format", "json"], klass=KLASS) == "clean"
    assert f"{path}: column {column} (units row) is in {unit!r}, a unit ncu does not write" in LAST_ERROR[0]


def test_an_unknown_unit_in_a_details_page_is_refused(tmp_path: Path) -> None:
    path = details_duration_in(tmp_path, "µs")
    assert cli(["analyze", str(path), "--format", "json", "--hw", "h200-sxm"], klass=KLASS) == "clean"
    assert (f"{path}: line 67: GPU Speed Of Light Throughput / Duration is in 'µs', a unit ncu does not write"
            in LAST_ERROR[0])


@pytest.mark.parametrize(("column", "unit", "kind"), [
    (DURATION, "byte", "time"), (DURATION, "%", "time"), (DURATION, "cycle", "time"), (READ, "us", "byte"),
    (READ, "Ghz", "byte"), ("dram__throughput.avg.pct_of_peak_sustained_elapsed", "Mbyte", "percent"),
    ("sm__cycles_elapsed.avg.per_second", "cycle", "hz or rate")])
def test_a_known_unit_of_the_wrong_kind_is_refused(tmp_path: Path, column: str, unit: str, kind: str) -> None:
    """ncu writes each of these units, but not on this counter: scaled by it, a duration in `byte`
    read as 35 ns (pct_sol 80,958 %), DRAM bytes in `us` as 1,000x more. Refused, naming the kind."""
    path = raw_edited(tmp_path, column, unit)
    assert cli(["analyze", str(path), "--format", "json"], klass=KLASS) == "clean"
    assert (f"{path}: units row: {column} is in {unit!r}, a unit of another kind than its counter's ({kind})"
            in LAST_ERROR[0]), LAST_ERROR[0]


def test_a_unit_of_the_wrong_kind_in_a_details_page_is_refused(tmp_path: Path) -> None:
    path = details_duration_in(tmp_path, "Mbyte")
    assert cli(["analyze", str(path), "--format", "json", "--hw", "h200-sxm"], klass=KLASS) == "clean"
    assert ("line 67 (GPU Speed Of Light Throughput / Duration): gpu__time_duration.sum is in 'Mbyte', a unit of "
            "another kind than its counter's (time)" in LAST_ERROR[0]), LAST_ERROR[0]


def test_a_counter_column_given_twice_is_refused(tmp_path: Path) -> None:
    """Two gpu__time_duration.sum columns that disagree: before, the last one (999 µs) was taken."""
    header, units, *rows = list(csv.reader((FX / RAWS[0]).open(newline="")))
    at = header.index(DURATION)
    path = write_csv(tmp_path / "twice.csv", [header + [DURATION], units + [units[at]], *[r + ["999"] for r in rows]])
    assert cli(["analyze", str(path), "--format", "json"], klass=KLASS) == "clean"
    assert f"{path}: the header names column {DURATION} twice" in LAST_ERROR[0], LAST_ERROR[0]


def test_an_unknown_unit_on_a_figure_not_read_is_passed_over(tmp_path: Path) -> None:
    path = raw_edited(tmp_path, "Context", "minute")
    assert [k.launch_id for k in load(path)] == [0]


@pytest.mark.parametrize(("column", "unit", "factor"), [(DURATION, "nsecond", 1.0), (DURATION, "usecond", 1e3),
                                                        (DURATION, "ms", 1e6), (DURATION, "second", 1e9),
                                                        (READ, "byte", 1.0), (READ, "Kbyte", 1e3),
                                                        (READ, "Gbyte", 1e9), (READ, "Tbyte", 1e12)])
def test_the_units_ncu_writes_scale_to_base(tmp_path: Path, column: str, unit: str, factor: float) -> None:
    """The same figure under each of ncu's spellings of a scale: the real value times the scale."""
    header, _, row = list(csv.reader((FX / RAWS[0]).open(newline="")))
    value = float(row[header.index(column)].replace(",", ""))
    (kernel,) = read_file(raw_edited(tmp_path, column, unit))
    assert kernel.metrics[column] == pytest.approx(value * factor)


def test_every_unit_in_the_real_exports_and_reports_is_known() -> None:
    """Every unit ncu wrote in the fixtures: each column of the raw exports, each row of the details
    pages, each metric of every report (as ncu_report gives it)."""
    units = set()
    for path in [*(FX / f for f in RAWS), *FX.glob("bundle_attn_causal/ncu-profiles/*-raw.csv")]:
        units |= set(list(csv.reader(path.open(newline="")))[1])
    rows = details_rows()
    units |= {r[rows[0].index("Metric Unit")] for r in rows[1:]}
    for report in FX.glob("*.ncu-rep"):
        action = ncu_report.load_report(str(report)).range_by_idx(0).action_by_idx(0)
        units |= {action.metric_by_name(n).unit() for n in action.metric_names()}
    assert {"us", "Mbyte", "Kbyte", "Gbyte", "Tbyte/s", "Ghz", "hz", "ns", "sector/us", "byte/s"} <= units
    assert [u for u in sorted(units) if unit_factor(u) is None] == []
