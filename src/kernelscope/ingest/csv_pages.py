"""Readers for ncu's CSV exports: `--page raw --csv` (wide) and `--page details --csv` (long).

Both carry the same identity columns; numbers may hold thousands separators and units are scaled
per value, so everything goes through `units` before it reaches a RawKernel.

Rows are streamed from the open file, never held as a whole-file list, and a raw row is read by
column index (a raw export has ~1,500 columns; a dict of them per row cost more than the analysis).
ncu quotes every field, so a line whose every quote belongs to a '","' delimiter (empty fields
included) splits on it (C speed); any other line (an escaped quote, a quoted field that spans
lines, a line longer than the csv module's field limit) goes through the csv module. Lines are
read at most LINE_LIMIT characters at a time, so one line (a gzip of one 1.4 GB line took 2.9 GB)
or one record over many lines cannot fill memory: a longer one is an error naming its line.
"""

from __future__ import annotations

import csv
import functools
import io
import itertools
import re
from collections.abc import Iterator, Sequence
from itertools import compress
from operator import itemgetter, mul
from typing import BinaryIO, TextIO, cast

from .. import catalogue as C
from ..errors import InputError
from ..model import RawKernel, all_in_range, in_range
from .names import kernel_name
from .units import (
    MalformedNumber,
    blank_unit,
    in_range_of,
    misfit,
    needs_unit,
    number,
    parse_number,
    unit_factor,
    unknown,
)

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
    (SOL, "SM Frequency"): C.GPC_CLOCK,  # ncu 2025.3.1's SpeedOfLight section: gpc__cycles_elapsed.avg.per_second
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
    (LAUNCH, "# SMs"): C.SM_COUNT,
}
DETAILS_HEADER = ("Section Name", "Metric Name", "Metric Unit", "Metric Value")
SUMMARY_COLUMNS = ("Invocations", "Minimum", "Maximum", "Average")  # ncu --print-summary: no launch's own values


# ncu's own log lines (`==PROF== Connected to process ...`, `==WARNING==`, `==ERROR==`): `ncu --csv`
# prints them to the same stdout as the export, so a saved capture holds them around its rows. ncu
# quotes every CSV field, so no record of an export starts like one.
NCU_LOG = re.compile(r"==[A-Z]+==")

FIELD_LIMIT = csv.field_size_limit()  # a longer line may hold a longer field: the csv module refuses it
LINE_LIMIT = 16 << 20  # characters of one line or record, its end included: ~400x a full raw export's row


# How CSV text is read: bytes that are not UTF-8 come through as surrogates and are refused a line
# at a time (records), so a whole-file read and a part's read (ingest/parts.py) name the same line
# whatever the decoder's chunks; the BOM of a first line is dropped where the file starts.
TEXT_ERRORS = "surrogateescape"


def text(fh: BinaryIO, start: bool = True) -> TextIO:
    """An input opened by files.open_input as CSV text, as every reader decodes it (`start`: it is
    read from the file's start, where a BOM is dropped)."""
    return io.TextIOWrapper(fh, encoding="utf-8-sig" if start else "utf-8", errors=TEXT_ERRORS, newline="")


def _too_long(number: int, source: str) -> InputError:
    return InputError(source, f"line {number}: a CSV line or record longer than {LINE_LIMIT:,} characters")


def _utf8(line: str, number: int, source: str) -> None:
    if not line.isascii():  # O(1) for a str; only a line with non-ASCII text is checked
        try:
            line.encode("utf-8", TEXT_ERRORS).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(source, f"line {number}: CSV is not UTF-8 text ({exc.reason})") from None


class NotSimple(Exception):
    """A line the fast split cannot read on its own (a quoted field over lines, an escaped quote, a
    line past the field limit), met where each line must be one record: a worker's part of a file."""


def records(stream: TextIO, source: str, first_line: int = 1,
            strict: bool = False) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of every non-empty CSV record, ncu's log lines passed over; `strict`:
    each line alone, or NotSimple.
    A file cut short is refused, never read as a shorter row: ncu quotes every field and ends every
    line, so a last line that ends inside a quoted field, or without a line end after an unquoted
    one (`"1.5","2` or `"1.5",`), was cut."""
    it = iter(functools.partial(stream.readline, LINE_LIMIT + 1), "")
    number = first_line - 1
    for line in it:
        number += 1
        if len(line) > LINE_LIMIT:
            raise _too_long(number, source)
        _utf8(line, number, source)
        if line[:1] == "\ufeff":  # a BOM past the file's start: a second file's (`cat a.csv b.csv`)
            line = line[1:]
        body = line.rstrip("\r\n")
        if not body or NCU_LOG.match(body):
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
            fields = next(csv.reader(counted, strict=True))
        except csv.Error as exc:
            if counted.ended:
                raise InputError(source, f"line {start}: the file ends inside a quoted field (it was cut "
                                         "short)") from None
            raise InputError(source, f"line {start}: not CSV ({exc})") from exc
        if not counted.last.endswith(("\n", "\r", '"')):
            raise InputError(source, f"line {number + counted.lines - 1}: the file ends in the middle of the line "
                                     "(it was cut short)")
        number += counted.lines - 1
        yield start, fields


class _Counting:
    """The lines of one record for the csv module, from `first` (checked already) on: it counts what
    the module pulled (a quoted field may span lines), checks each further line's text, and keeps
    the last line pulled and whether the file ended."""

    def __init__(self, first: str, rest: Iterator[str], number: int, source: str) -> None:
        self.inner, self.lines, self.number, self.source = itertools.chain([first], rest), 0, number, source
        self.last, self.ended, self.chars = first, False, 0

    def __iter__(self) -> _Counting:
        return self

    def __next__(self) -> str:
        try:
            line = next(self.inner)
        except StopIteration:
            self.ended = True
            raise
        self.chars += len(line)
        if self.chars > LINE_LIMIT:
            raise _too_long(self.number, self.source)
        if self.lines:
            _utf8(line, self.number + self.lines, self.source)
        self.lines += 1
        self.last = line
        return line


def metrics_of(names: Sequence[str], factors: Sequence[float], texts: Sequence[str]
               ) -> tuple[dict[str, float], tuple[str, ...]]:
    """The wanted fields of one raw row in base units, and the names of those out of range raw or
    scaled (corruption: model.in_range), which are left out. An empty field was not collected, a
    number may carry thousands separators. The common row goes through C loops only (join, replace,
    split, map, sum, min: model.all_in_range): ~90 fields a row, the hot loop of a large export."""
    kept = list(filter(None, texts))
    if len(kept) < len(texts):
        names, factors = list(compress(names, texts)), list(compress(factors, texts))
    joined = _JOIN.join(kept)  # ncu writes thousands separators: drop them all in one pass, once checked
    values: list[float | None] | None = None
    if "_" not in joined and joined.isascii() and ("," not in joined or not BAD_COMMA.search(joined)):
        parts = joined.replace(",", "").split(_JOIN) if "," in joined else kept
        try:
            values = list(map(float, parts)) if len(parts) == len(kept) else None
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
# a comma that is no thousands separator: not three digits and then a field's end, a point, an exponent or
# another group (each row's fields joined by _JOIN): such a row is read a field at a time, and refused there
BAD_COMMA = re.compile(r",(?!\d{3}(?:[,.eE\x1f]|$))")


def _column(header: list[str], name: str) -> int | None:
    return header.index(name) if name in header else None


def _field(row: list[str], at: int | None) -> str:
    return row[at] if at is not None and at < len(row) else ""


def _factors(header: list[str], units: list[str], at: list[int], source: str) -> list[float]:
    """The unit factor of each column read; a unit ncu does not write is refused (units.py)."""
    out = []
    for i in at:
        unit = units[i] if i < len(units) else ""
        factor = unit_factor(unit)
        if factor is None:
            raise InputError(source, unknown(f"column {header[i]} (units row)", unit))
        if problem := misfit(header[i], unit):
            raise InputError(source, f"units row: {problem}")
        out.append(factor)
    return out


def _header_again(row: list[str]) -> bool:
    """A row that is an export's header: two exports joined into one file (`cat a.csv b.csv`)."""
    return bool(row) and row[0] == "ID" and KERNEL_NAME in row


def read_raw(header: list[str], rows: Iterator[tuple[int, list[str]]], source: str,
             units: list[str] | None = None, ids: set[int] | None = None) -> Iterator[RawKernel]:
    """Wide page: header row, units row, then one row a launch (`units`: the units row, read before).
    A row of another width, or that names no kernel or "Kernel Name", is looked at again (_misfit):
    a header or units row again, or a row of another width, is an error naming its line. A launch
    ID seen before (in `ids`, the IDs of the rows before these, when given) is an error: one export
    gives each launch its own."""
    if units is None:
        try:
            _, units = next(rows)
        except StopIteration:
            raise InputError(source, "raw CSV has a header but no units row") from None
    at = [i for i, h in enumerate(header) if h in C.NUMERIC]  # the device name: text, read below
    names = [header[i] for i in at]
    if len(set(names)) < len(names):  # which value is the counter's? neither is taken over the other
        twice = next(n for n in names if names.count(n) > 1)
        raise InputError(source, f"the header names column {twice} twice: which one holds the counter is not known")
    factors = _factors(header, units, at, source)
    blank = [i for i in at if needs_unit(header[i]) and not (units[i] if i < len(units) else "").strip()]
    pick = itemgetter(*at) if len(at) > 1 else (lambda row: tuple(row[i] for i in at))  # itemgetter of 1 is no tuple
    name_at = header.index(KERNEL_NAME)
    id_at, grid_at, block_at, device_at = (_column(header, c) for c in ("ID", "Grid Size", "Block Size",
                                                                       C.DEVICE_NAME))
    width = len(header)
    seen = None if id_at is None else set() if ids is None else ids
    for line, row in rows:
        if len(row) != width or row[name_at] in ("", KERNEL_NAME):
            _misfit(source, line, row, header)
        try:
            figures = metrics_of(names, factors, pick(row))
            unitless = next((header[i] for i in blank if number(row[i]) is not None), None)
        except MalformedNumber as exc:
            raise InputError(source, f"line {line}: {exc}") from None
        if unitless:
            raise InputError(source, f"line {line}: " + blank_unit(f"column {unitless} (units row)"))
        raw = _identity(source, row[name_at], _field(row, id_at), _field(row, grid_at), _field(row, block_at),
                        _field(row, device_at), *figures)
        if seen is not None:
            if raw.launch_id in seen:
                raise InputError(source, f"line {line}: launch ID {raw.launch_id} again: one export gives each "
                                         "launch its own (two exports joined into one file?)")
            seen.add(raw.launch_id)
        yield raw


MAX_LAUNCH_ID = 2**63 - 1  # the integer columns are int64 (Parquet, DataFrames)


def _misfit(source: str, line: int, row: list[str], header: list[str]) -> None:
    """Raise for a raw row that is no launch row: a header or units row again (two exports joined),
    a row of another width. Every launch ncu exports names its kernel."""
    if _header_again(row):
        raise InputError(source, f"line {line} is a header row again: two exports joined into one file?")
    if len(row) != len(header):
        raise InputError(source, f"line {line} has {len(row)} fields, the header has {len(header)}")
    if not row[header.index(KERNEL_NAME)]:
        raise InputError(source, f"line {line} names no kernel: a units row again (two exports joined into one "
                                 "file?), or no launch row")


def _identity(source: str, full: str, launch: str, grid: str, block: str, device: str,
              metrics: dict[str, float], out_of_range: Sequence[str] = ()) -> RawKernel:
    return RawKernel(source=source, launch_id=_launch_id(launch, source), name=kernel_name(full), name_full=full,
                     device=device or None, grid=grid or None, block=block or None, metrics=metrics,
                     out_of_range=tuple(out_of_range))


def _launch_id(text: str, source: str) -> int:
    """ncu's launch number (none given: 0): a whole number that an int64 holds, as the integer
    columns are in Parquet and DataFrames."""
    value = number(text)
    if value is None and not text.strip():
        return 0
    whole = (int(text) if text.isascii() and text.isdigit() else -1 if value is None
             else int(value) if value.is_integer() else -1)
    if not 0 <= whole <= MAX_LAUNCH_ID:
        raise InputError(source, f"launch ID {text!r:.40} is not a whole number from 0 to {MAX_LAUNCH_ID:,}")
    return whole


IDENTITY = ("Process ID", KERNEL_NAME, "Context", "Stream", "Block Size", "Grid Size", "Device")


def read_details(header: list[str], rows: Iterator[tuple[int, list[str]]], source: str) -> Iterator[RawKernel]:
    """Long page: one row a (launch, metric), a launch's rows together; rule rows have an empty
    metric name and are skipped. Each launch is given when its rows end. A launch ID met again
    after other launches, a second kernel (its name, process, grid, ...) under one ID, or a figure
    given twice for one launch is two launches sharing an ID: an error naming the line, never one
    launch of both."""
    needed = ("ID", KERNEL_NAME, *DETAILS_HEADER)
    missing = [c for c in needed if c not in header]
    if missing:
        raise InputError(source, f"details CSV lacks the column(s) {', '.join(missing)}")
    launch_at, name_at, section_at, label_at, unit_at, value_at = (header.index(c) for c in needed)
    grid_at, block_at, cc_at = (_column(header, c) for c in ("Grid Size", "Block Size", "CC"))
    who = itemgetter(*(header.index(c) for c in IDENTITY if c in header))
    shortest = max(launch_at, name_at, section_at, label_at, unit_at, value_at) + 1
    done: dict[str, int] = {}  # launch ID -> the line its rows started at
    first: tuple[int, list[str]] | None = None  # the current launch's first line and row
    metrics: dict[str, float] = {}
    given: set[tuple[str, str]] = set()  # the current launch's (section, label) pairs read
    wrong: list[str] = []  # the current launch's figures out of range
    for line, row in rows:
        if len(row) < shortest:
            raise InputError(source, f"line {line} is truncated ({len(row)} fields, needs {shortest})")
        if first is None or row[launch_at] != first[1][launch_at]:
            if first is not None:
                yield _identity(source, first[1][name_at], first[1][launch_at], _field(first[1], grid_at),
                                _field(first[1], block_at), "", _with_cc(metrics, _field(first[1], cc_at)), wrong)
                done[first[1][launch_at]] = first[0]
            first, metrics, given, wrong = _launch_start(source, line, row, launch_at, done), {}, set(), []
        elif who(row) != who(first[1]):
            column, i = next((c, header.index(c)) for c in IDENTITY if c in header and row[header.index(c)]
                             != first[1][header.index(c)])  # what differs: the name, or its process, grid, device ...
            raise InputError(source, f"line {line}: launch ID {row[launch_at]} holds a second kernel (its {column} "
                                     f"at line {first[0]}: {first[1][i]!r:.80}, here: {row[i]!r:.80}): two launches "
                                     "share one ID")
        label = row[label_at]
        if not label:
            continue
        name = label if label in C.WANTED else DETAILS_LABELS.get((row[section_at], label))
        if name:
            if (row[section_at], label) in given:
                raise InputError(source, f"line {line}: launch ID {row[launch_at]} gives {label!r} twice: two "
                                         "launches share one ID")
            given.add((row[section_at], label))
            factor = unit_factor(row[unit_at])
            if factor is None:
                raise InputError(source, f"line {line}: " + unknown(f"{row[section_at]} / {label}", row[unit_at]))
            if problem := misfit(name, row[unit_at]):
                raise InputError(source, f"line {line} ({row[section_at]} / {label}): {problem}")
            try:
                value = number(row[value_at])
            except MalformedNumber as exc:
                raise InputError(source, f"line {line}: {row[section_at]} / {label}: {exc}") from None
            if value is not None and not row[unit_at].strip() and needs_unit(name):
                raise InputError(source, f"line {line}: " + blank_unit(f"{row[section_at]} / {label}"))
            if value is not None:
                if in_range(value) and in_range(value * factor):
                    metrics[name] = value * factor
                else:
                    wrong.append(name)
    if first is not None:
        yield _identity(source, first[1][name_at], first[1][launch_at], _field(first[1], grid_at),
                        _field(first[1], block_at), "", _with_cc(metrics, _field(first[1], cc_at)), wrong)


def _with_cc(metrics: dict[str, float], cc: str) -> dict[str, float]:
    """The details page's "CC" column ("9.0") as the compute-capability attributes a report holds:
    with the "# SMs" row, what tells the device of an export that names none (ceilings/from_report.py)."""
    major, dot, minor = cc.partition(".")
    if dot and major.isdigit() and minor.isdigit() and len(cc) <= 6:
        metrics.setdefault(C.COMPUTE_CAPABILITY, float(major))
        metrics.setdefault(C.CC_MINOR, float(minor))
    return metrics


def _launch_start(source: str, line: int, row: list[str], launch_at: int, done: dict[str, int]
                  ) -> tuple[int, list[str]]:
    """The first row of a launch's rows, refused when it is a header again, or its ID is no launch
    number or was given before."""
    launch = row[launch_at]
    if _header_again(row):
        raise InputError(source, f"line {line} is a header row again: two exports joined into one file?")
    if parse_number(launch) is None:
        raise InputError(source, f"line {line}: the ID {launch!r} is not a launch number")
    if launch in done:
        raise InputError(source, f"line {line}: launch ID {launch} again, after other launches (its rows began at "
                                 f"line {done[launch]}): two launches share one ID")
    return line, row


def read(stream: TextIO, source: str) -> Iterator[RawKernel]:
    """Pick the page by its header, not the file name."""
    rows = records(stream, source)
    first = next(rows, None)
    if first is None or KERNEL_NAME not in first[1]:
        raise InputError(source, f'CSV has no "{KERNEL_NAME}" column: not an ncu --csv export')
    header = first[1]
    if all(h in header for h in DETAILS_HEADER):
        return read_details(header, rows, source)
    if "Metric Name" in header or any(h in header for h in SUMMARY_COLUMNS):
        raise InputError(source, "an ncu --print-summary CSV (each metric's minimum, maximum and average over a "
                                 "kernel's launches, no launch's own values): export one with ncu --import REPORT "
                                 "--csv --page raw (or --page details)")
    if header[0] == KERNEL_NAME:  # `"Kernel Name","<the kernel>"`, then "Address","Source",...: no raw page's header
        second = next(rows, None)
        if second is not None and second[1][:2] == ["Address", "Source"]:
            raise InputError(source, "an ncu source page (--page source: one row an instruction, no launch's "
                                     "counters): export the report with ncu --import REPORT --csv --page raw")
        rows = itertools.chain([second] if second is not None else [], rows)
    return read_raw(header, rows, source)
