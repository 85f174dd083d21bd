"""A large input cut into parts that worker processes read and judge one each (report/stream.py):
a raw-page CSV export at line starts, an `.ncu-rep` report by launch number. A launch costs ~250 µs
of Python from CSV row to JSON text, and ncu_report spends ~0.7 ms reading a launch and keeps
0.6-0.9 MB a launch read until its process ends, so both are worth spreading over processes.

A CSV part is read strictly: each of its lines must be one record by the fast split
(csv_pages.records), which ncu's exports are. Then the parts' launches are, in order, the launches
a whole-file read gives. A part that holds anything else (a quoted field over lines, an escaped
quote, bad UTF-8, a malformed row, a last line cut short) is read again, with the rest of the file,
in one stream from the part's start (`read_from`): its first line starts a record, since every
line before it was one, and the stream reads, and words any error, as a whole-file read would.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ..errors import InputError
from ..files import open_input
from ..model import RawKernel
from . import NO_LAUNCHES, csv_pages, ncu_rep
from .detect import sniff

REPORT_PART = 256  # launches, ~0.3 s to read: over a worker's start (~0.15 s); parts from 512 launches


@dataclass(frozen=True)
class CsvSplit:
    path: Path
    header: list[str]
    units: list[str]
    bounds: list[int]  # part i is the bytes [bounds[i], bounds[i + 1]); bounds[0] is the first launch row

    @property
    def parts(self) -> int:
        return len(self.bounds) - 1

    @property
    def unique_ids(self) -> bool:
        """Whether its launches' IDs are the export's own, one a launch, to be checked across parts."""
        return "ID" in self.header

    def read_part(self, i: int) -> Iterator[RawKernel]:
        """The launches of part i, each line one record or csv_pages.NotSimple; bad UTF-8 or a
        malformed row raises InputError (its line number counted from the part)."""
        with open_input(self.path, what="report") as fh:
            fh.seek(self.bounds[i])
            data = fh.read(self.bounds[i + 1] - self.bounds[i])
            self._unchanged(fh, len(data) == self.bounds[i + 1] - self.bounds[i])
        lines = csv_pages.text(io.BytesIO(data), start=False)  # as the whole-file read splits and decodes
        shown = str(self.path)
        yield from csv_pages.read_raw(self.header, csv_pages.records(lines, shown, strict=True), shown, self.units)

    def _unchanged(self, fh: BinaryIO, whole: bool) -> None:
        """Refuse a file whose size is not the one it was split at (being written, cut, or appended
        to): its parts would hold some launches and drop the rest, with no error."""
        size = fh.seek(0, io.SEEK_END)
        if not whole or size != self.bounds[-1]:
            raise InputError(self.path, f"changed while it was read ({self.bounds[-1]} bytes when it was split, "
                                        f"{size} now): read it again once it is complete")

    def read_from(self, i: int, seen: int, ids: set[int]) -> Iterator[RawKernel]:
        """The launches from part i's start to the end of the file in one stream, as a whole-file
        read gives them; `seen`: launches the parts before it held (none at all is an error); `ids`:
        their launch IDs."""
        shown = str(self.path)
        with open_input(self.path, what="report") as fh:
            line = 1 + _lines(fh, self.bounds[i])
            text = csv_pages.text(fh, start=False)
            for raw in csv_pages.read_raw(self.header, csv_pages.records(text, shown, line), shown, self.units, ids):
                seen += 1
                yield raw
            self._unchanged(fh, True)
        if not seen:
            raise InputError(shown, NO_LAUNCHES)


@dataclass(frozen=True)
class ReportSplit:
    path: Path
    bounds: list[int]  # part i is the launches numbered [bounds[i], bounds[i + 1])

    @property
    def parts(self) -> int:
        return len(self.bounds) - 1

    unique_ids = False  # a report numbers its own launches

    def read_part(self, i: int) -> Iterator[RawKernel]:
        return ncu_rep.read(self.path, str(self.path), self.bounds[i], self.bounds[i + 1])

    def read_from(self, i: int, seen: int, ids: set[int]) -> Iterator[RawKernel]:
        """Part i's launches and the rest, read here: a worker failed on part i, so this gives its
        error again (a report cut in two holds launches, whatever `seen` says)."""
        return ncu_rep.read(self.path, str(self.path), self.bounds[i])


Split = CsvSplit | ReportSplit


def split(path: Path, part_bytes: int, jobs: int) -> Split | None:
    """A plain raw-page CSV of more than two parts' bytes of launch rows, whose header and units
    rows are a line each, cut at line starts into parts of about `part_bytes`; a plain report of at
    least two REPORT_PARTs of launches, one part a job; None for any other input, read whole."""
    if path.is_dir():
        return None  # a multiplexed bundle, read whole (ingest.iter_file)
    with open_input(path, what="report") as fh:
        kind = sniff(fh.read(4096))
    if kind == "ncu-rep":
        count = ncu_rep.launches(path)
        share = -(-count // min(jobs, count // REPORT_PART or 1))
        return ReportSplit(path, [*range(0, count, share), count]) if count >= 2 * REPORT_PART else None
    return _csv_split(path, part_bytes) if kind == "csv" else None


def _csv_split(path: Path, part_bytes: int) -> CsvSplit | None:
    with open_input(path, what="report") as fh:
        first, second = fh.readline(csv_pages.FIELD_LIMIT + 4), fh.readline(csv_pages.FIELD_LIMIT + 4)
        size = fh.seek(0, io.SEEK_END)
    start = len(first) + len(second)
    if size - start < 2 * part_bytes \
            or not all(line.endswith(b"\n") and b"\r" not in line.rstrip(b"\r\n") for line in (first, second)):
        return None
    try:
        head = io.StringIO(first.decode("utf-8-sig") + second.decode("utf-8"), newline="")
        found = [f for _, f in csv_pages.records(head, str(path), strict=True)]
    except (UnicodeDecodeError, csv_pages.NotSimple):
        return None
    if len(found) != 2 or csv_pages.KERNEL_NAME not in found[0] or "Metric Name" in found[0] \
            or any(h in found[0] for h in csv_pages.SUMMARY_COLUMNS):
        return None  # not a raw page (details, a --print-summary): read whole, where it is told apart
    bounds = _bounds(path, start, size, part_bytes)
    return None if bounds is None else CsvSplit(path, found[0], found[1], bounds)


def _bounds(path: Path, start: int, size: int, part_bytes: int) -> list[int] | None:
    """Offsets just past a newline, about `part_bytes` apart, from `start` to `size`; None when a
    line runs past csv_pages.LINE_LIMIT bytes (the whole-file read names it; a part never holds it)."""
    bounds = [start]
    with open_input(path, what="report") as fh:
        while bounds[-1] + part_bytes < size:
            at = fh.seek(bounds[-1] + part_bytes)
            while (block := fh.read(1 << 16)) and b"\n" not in block:
                at += len(block)
                if at - bounds[-1] - part_bytes > csv_pages.LINE_LIMIT:
                    return None
            if not block:
                break
            bounds.append(at + block.index(b"\n") + 1)
    if bounds[-1] < size:
        bounds.append(size)
    return bounds


def _lines(fh: BinaryIO, end: int) -> int:
    """Line ends in the first `end` bytes as the text reader splits lines (\\n, \\r\\n or \\r),
    leaving the file at `end`; a \\r\\n cut by a block's end is one."""
    count, after_cr = 0, False
    while fh.tell() < end:
        block = fh.read(min(1 << 20, end - fh.tell()))
        count += block.count(b"\n") + block.count(b"\r") - block.count(b"\r\n") - (after_cr and block[:1] == b"\n")
        after_cr = block.endswith(b"\r")
    return count
