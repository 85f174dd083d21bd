"""Data lost with exit 0 (issue 18): a report is read whole or refused. Real files cut: a report
cut at every one of its block boundaries, damaged where ncu_report loses launches or aborts, and a
bundle's report cut between launches. Each ends handled with every launch, or as one clean error
naming the file and what is wrong; hostile.py counts them under KLASS."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import struct
from pathlib import Path

import ncu_report
import pytest

from hostile import LAST_ERROR, api, cli
from kernelscope import load
from kernelscope.ingest import ncu_rep
from kernelscope.ingest.detect import blocks
from kernelscope.manifest import sha256_file

KLASS = "data lost: truncated, merged, unknown units"
FX = Path(__file__).parent / "fixtures"
MANY = Path(__file__).resolve().parents[1] / "bench" / "data" / "many.ncu-rep.gz"


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
    were refused as cut; now 299 read as a shorter report, each one ncu itself could have written."""
    data = many.read_bytes()
    with many.open("rb") as fh:
        whole_blocks = list(blocks(fh, str(many)))
    session_at = next(b.end for b in whole_blocks if b.command_line)
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
    assert kept[len(data)] == 300 and len(kept) == 300 and outcomes == {"clean": 326, "handled": 300}


@pytest.mark.parametrize("end", [196, 615964, 629927, 649978, 658962, 660609, 4377337, 25197912])
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
