"""Readers for ncu's CSV exports: `--page raw --csv` (wide) and `--page details --csv` (long).

Both carry the same identity columns; numbers may hold thousands separators and units are scaled
per value, so everything goes through `units` before it reaches a RawKernel.

Rows are streamed from the open file, never held as a whole-file list, and a raw row is read by
column index (a raw export has ~1,500 columns; a dict of them per row cost more than the analysis).
ncu quotes every field, so a line whose every quote belongs to a '","' delimiter (empty fields
included) splits on it (C speed); any other line (an escaped quote, a quoted field that spans
lines, a line longer than the csv module's field limit) goes through the csv module.
"""

from __future__ import annotations

import csv
import itertools
from collections.abc import Iterable, Iterator, Sequence
from itertools import compress
from operator import itemgetter, mul
from typing import cast

from .. import catalogue as C
from ..errors import InputError
from ..model import RawKernel, all_in_range, in_range
from .names import short_name
from .units import in_range_of, number, unit_factor

KERNEL_NAME = "Kernel Name"

# The details page names figures by their section label, not their metric; these are the labels
# (section, label) whose metric the analysis reads. A `--metrics` capture instead lists raw metric
# names under "Command line profiler metrics", which need no mapping.
SOL, OCC, LAUNCH = "GPU Speed Of Light Throughput", "Occupancy", "Launch Statistics"
DETAILS_LABELS: dict[tuple[str, str], str] = {
    (SOL, "Duration"): C.DURATION,
    (SOL, "DRAM Throughput"): C.DRAM_PCT[0],
    (SOL, "Compute (SM) Throughput"): C.SM_BUSY,
    (SOL, "Memory Throughput"): C.MEM_BUSY,
    (SOL, "L2 Cache Throughput"): C.L2_PCT,
    (SOL, "DRAM Frequency"): C.DRAM_CLOCK,
    (OCC, "Achieved Occupancy"): C.OCC_ACHIEVED,
    (OCC, "Theoretical Occupancy"): C.OCC_THEORETICAL,
    (OCC, "Achieved Active Warps Per SM"): C.WARPS_ACTIVE,
    (OCC, "Block Limit Registers"): C.BLOCK_LIMITS["registers"],
    (OCC, "Block Limit Shared Mem"): C.BLOCK_LIMITS["shared_mem"],
    (OCC, "Block Limit Warps"): C.BLOCK_LIMITS["warps"],
    (OCC, "Block Limit SM"): C.BLOCK_LIMITS["blocks"],
    (LAUNCH, "Registers Per Thread"): C.REGISTERS,
    (LAUNCH, "Static Shared Memory Per Block"): C.SMEM_STATIC,
    (LAUNCH, "Dynamic Shared Memory Per Block"): C.SMEM_DYNAMIC,
    (LAUNCH, "Driver Shared Memory Per Block"): C.SMEM_DRIVER,
    (LAUNCH, "Waves Per SM"): C.WAVES,
}
DETAILS_HEADER = ("Section Name", "Metric Name", "Metric Unit", "Metric Value")


FIELD_LIMIT = csv.field_size_limit()  # a longer line may hold a longer field: the csv module refuses it


# How CSV text is read: bytes that are not UTF-8 come through as surrogates and are refused a line
# at a time (records), so a whole-file read and a part's read (ingest/parts.py) name the same line
# whatever the decoder's chunks; the BOM of a first line is dropped where the file starts.
TEXT_ERRORS = "surrogateescape"


def _utf8(line: str, number: int, source: str) -> None:
    if not line.isascii():  # O(1) for a str; only a line with non-ASCII text is checked
        try:
            line.encode("utf-8", TEXT_ERRORS).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(source, f"line {number}: CSV is not UTF-8 text ({exc.reason})") from None


class NotSimple(Exception):
    """A line the fast split cannot read on its own (a quoted field over lines, an escaped quote, a
    line past the field limit), met where each line must be one record: a worker's part of a file."""


def records(lines: Iterable[str], source: str, first_line: int = 1,
            strict: bool = False) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of every non-empty CSV record; `strict`: each line alone, or NotSimple."""
    it = iter(lines)
    number = first_line - 1
    for line in it:
        number += 1
        _utf8(line, number, source)
        body = line.rstrip("\r\n")
        if not body:
            continue
        if 1 < len(body) <= FIELD_LIMIT and body[0] == '"' and body[-1] == '"':
            fields = body[1:-1].split('","')
            if body.count('"') == 2 * len(fields):  # every quote is a delimiter's: the split is the CSV
                yield number, fields
                continue
        if strict:
            raise NotSimple(f"{source}: line {number}")
        start = number
        counted = _Counting(line, it, number, source)  # the csv module pulls the lines it needs from `it`
        try:
            fields = next(csv.reader(counted))
        except csv.Error as exc:
            raise InputError(source, f"line {start}: not CSV ({exc})") from exc
        number += counted.lines - 1
        yield start, fields


class _Counting:
    """The lines of one record for the csv module, from `first` (checked already) on: it counts what
    the module pulled (a quoted field may span lines), and checks each further line's text."""

    def __init__(self, first: str, rest: Iterator[str], number: int, source: str) -> None:
        self.inner, self.lines, self.number, self.source = itertools.chain([first], rest), 0, number, source

    def __iter__(self) -> _Counting:
        return self

    def __next__(self) -> str:
        line = next(self.inner)
        if self.lines:
            _utf8(line, self.number + self.lines, self.source)
        self.lines += 1
        return line


def metrics_of(names: Sequence[str], factors: Sequence[float], texts: Sequence[str]
               ) -> tuple[dict[str, float], tuple[str, ...]]:
    """The wanted fields of one raw row in base units, and the names of those out of range raw or
    scaled (corruption: model.in_range), which are left out. An empty field was not collected, a
    number may carry thousands separators. The common row goes through C loops only (join, replace,
    split, map, fsum, min: model.all_in_range): ~90 fields a row, the hot loop of a large export."""
    kept = list(filter(None, texts))
    if len(kept) < len(texts):
        names, factors = list(compress(names, texts)), list(compress(factors, texts))
    joined = _JOIN.join(kept)  # ncu writes thousands separators: drop them all in one pass
    parts = (joined.replace(",", "") if "," in joined else joined).split(_JOIN)
    try:
        values: list[float | None] | None = list(map(float, parts)) if len(parts) == len(kept) else None
    except ValueError:
        values = None
    if values is None:  # text where a number belongs (n/a, -), or a field holding _JOIN: one by one
        values = list(map(number, kept))
        names = list(compress(names, (v is not None for v in values)))
        factors = list(compress(factors, (v is not None for v in values)))
        values = [v for v in values if v is not None]
    raw = cast("list[float]", values)
    scaled = list(map(mul, raw, factors))
    if all_in_range(raw) and all_in_range(scaled):
        return dict(zip(names, scaled, strict=True)), ()
    return in_range_of(names, raw, scaled)


_JOIN = "\x1f"  # the ASCII unit separator: a field that holds one is read one by one


def _column(header: list[str], name: str) -> int | None:
    return header.index(name) if name in header else None


def _field(row: list[str], at: int | None) -> str:
    return row[at] if at is not None and at < len(row) else ""


def read_raw(header: list[str], rows: Iterator[tuple[int, list[str]]], source: str,
             units: list[str] | None = None) -> Iterator[RawKernel]:
    """Wide page: header row, units row, then one row a launch (`units`: the units row, read before)."""
    if units is None:
        try:
            _, units = next(rows)
        except StopIteration:
            raise InputError(source, "raw CSV has a header but no units row") from None
    at = [i for i, h in enumerate(header) if h in C.NUMERIC]  # the device name: text, read below
    names = [header[i] for i in at]
    factors = [unit_factor(units[i] if i < len(units) else "") for i in at]
    pick = itemgetter(*at) if len(at) > 1 else (lambda row: tuple(row[i] for i in at))  # itemgetter of 1 is no tuple
    name_at = header.index(KERNEL_NAME)
    id_at, grid_at, block_at, device_at = (_column(header, c) for c in ("ID", "Grid Size", "Block Size",
                                                                       C.DEVICE_NAME))
    width = len(header)
    for line, row in rows:
        if len(row) != width:
            raise InputError(source, f"line {line} has {len(row)} fields, the header has {width}")
        yield _identity(source, row[name_at], _field(row, id_at), _field(row, grid_at), _field(row, block_at),
                        _field(row, device_at), *metrics_of(names, factors, pick(row)))


MAX_LAUNCH_ID = 2**63 - 1  # the integer columns are int64 (Parquet, DataFrames)


def _identity(source: str, full: str, launch: str, grid: str, block: str, device: str,
              metrics: dict[str, float], out_of_range: Sequence[str] = ()) -> RawKernel:
    return RawKernel(source=source, launch_id=_launch_id(launch, source), name=short_name(full), name_full=full,
                     device=device or None, grid=grid or None, block=block or None, metrics=metrics,
                     out_of_range=tuple(out_of_range))


def _launch_id(text: str, source: str) -> int:
    """ncu's launch number (none given: 0): a whole number that an int64 holds, as the integer
    columns are in Parquet and DataFrames."""
    value = number(text)
    if value is None:
        return 0
    whole = int(text) if text.isascii() and text.isdigit() else int(value) if value.is_integer() else -1
    if not 0 <= whole <= MAX_LAUNCH_ID:
        raise InputError(source, f"launch ID {text!r:.40} is not a whole number from 0 to {MAX_LAUNCH_ID:,}")
    return whole


def read_details(header: list[str], rows: Iterator[tuple[int, list[str]]], source: str) -> Iterator[RawKernel]:
    """Long page: one row a (launch, metric); rule rows have an empty metric name and are skipped."""
    needed = ("ID", KERNEL_NAME, *DETAILS_HEADER)
    missing = [c for c in needed if c not in header]
    if missing:
        raise InputError(source, f"details CSV lacks the column(s) {', '.join(missing)}")
    launch_at, name_at, section_at, label_at, unit_at, value_at = (header.index(c) for c in needed)
    grid_at, block_at = _column(header, "Grid Size"), _column(header, "Block Size")
    shortest = max(launch_at, name_at, section_at, label_at, unit_at, value_at) + 1
    launches: dict[str, tuple[list[str], dict[str, float], list[str]]] = {}  # id -> row, metrics, out of range
    for line, row in rows:
        if len(row) < shortest:
            raise InputError(source, f"line {line} is truncated ({len(row)} fields, needs {shortest})")
        _, metrics, wrong = launches.setdefault(row[launch_at], (row, {}, []))
        label = row[label_at]
        if not label:
            continue
        name = label if label in C.WANTED else DETAILS_LABELS.get((row[section_at], label))
        if name and (value := number(row[value_at])) is not None:
            scaled = value * unit_factor(row[unit_at])
            if in_range(value) and in_range(scaled):
                metrics[name] = scaled
            else:
                wrong.append(name)
    for launch, (row, metrics, wrong) in launches.items():
        yield _identity(source, row[name_at], launch, _field(row, grid_at), _field(row, block_at), "", metrics,
                        wrong)


def read(lines: Iterable[str], source: str) -> Iterator[RawKernel]:
    """Pick the page by its header, not the file name."""
    rows = records(lines, source)
    first = next(rows, None)
    if first is None or KERNEL_NAME not in first[1]:
        raise InputError(source, f'CSV has no "{KERNEL_NAME}" column: not an ncu --csv export')
    header = first[1]
    if all(h in header for h in DETAILS_HEADER):
        return read_details(header, rows, source)
    return read_raw(header, rows, source)
