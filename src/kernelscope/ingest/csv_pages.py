"""Readers for ncu's CSV exports: `--page raw --csv` (wide) and `--page details --csv` (long).

Both carry the same identity columns; numbers may hold thousands separators and units are scaled
per value, so everything goes through `units` before it reaches a RawKernel.

Rows are streamed from the open file, never held as a whole-file list, and a raw row is read by
column index (a raw export has ~1,500 columns; a dict of them per row cost more than the analysis).
ncu quotes every field, so a line without an escaped quote splits on '","' (C speed); any other
line goes through the csv module, which also joins a quoted field that spans lines.
"""

from __future__ import annotations

import csv
import itertools
from collections.abc import Iterable, Iterator

from .. import catalogue as C
from ..errors import InputError
from ..model import RawKernel
from .names import short_name
from .units import MAX_MAGNITUDE, measured, parse_number, unit_factor

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


def records(lines: Iterable[str], source: str) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of every non-empty CSV record."""
    it = iter(lines)
    number = 0
    for line in it:
        number += 1
        body = line.rstrip("\r\n")
        if not body:
            continue
        if len(body) > 1 and body[0] == '"' and body[-1] == '"' and '""' not in body:
            fields = body[1:-1].split('","')
            if not any('"' in f for f in fields):
                yield number, fields
                continue
        start = number
        counted = _Counting(itertools.chain([line], it))  # the csv module pulls the lines it needs from `it`
        try:
            fields = next(csv.reader(counted))
        except csv.Error as exc:
            raise InputError(source, f"line {start}: not CSV ({exc})") from exc
        number += counted.lines - 1
        yield start, fields


class _Counting:
    """An iterator of lines that counts what the csv module pulled from it (a quoted field may span lines)."""

    def __init__(self, lines: Iterator[str]) -> None:
        self.inner, self.lines = lines, 0

    def __iter__(self) -> _Counting:
        return self

    def __next__(self) -> str:
        line = next(self.inner)
        self.lines += 1
        return line


def _scaled(text: str, factor: float) -> float | None:
    value = parse_number(text)
    if value is None:
        return None
    value *= factor
    return value if measured(value) else None


def _column(header: list[str], name: str) -> int | None:
    return header.index(name) if name in header else None


def _field(row: list[str], at: int | None) -> str:
    return row[at] if at is not None and at < len(row) else ""


def read_raw(header: list[str], rows: Iterator[tuple[int, list[str]]], source: str) -> Iterator[RawKernel]:
    """Wide page: header row, units row, then one row a launch."""
    try:
        _, units = next(rows)
    except StopIteration:
        raise InputError(source, "raw CSV has a header but no units row") from None
    wanted = [(i, h, unit_factor(units[i] if i < len(units) else "")) for i, h in enumerate(header) if h in C.WANTED]
    name_at = header.index(KERNEL_NAME)
    id_at, grid_at, block_at, device_at = (_column(header, c) for c in ("ID", "Grid Size", "Block Size",
                                                                       C.DEVICE_NAME))
    width = len(header)
    for line, row in rows:
        if len(row) != width:
            raise InputError(source, f"line {line} has {len(row)} fields, the header has {width}")
        metrics = {}
        for i, name, factor in wanted:  # inlined: ~90 a row, the hot loop of a large export
            text = row[i]
            if not text:
                continue
            try:
                value: float | None = float(text) * factor
            except ValueError:
                value = _scaled(text, factor)
            if value is not None and -MAX_MAGNITUDE <= value <= MAX_MAGNITUDE:
                metrics[name] = value
        yield _identity(source, row[name_at], _field(row, id_at), _field(row, grid_at), _field(row, block_at),
                        _field(row, device_at), metrics)


def _identity(source: str, full: str, launch: str, grid: str, block: str, device: str,
              metrics: dict[str, float]) -> RawKernel:
    number = parse_number(launch)
    return RawKernel(source=source, launch_id=int(number) if number is not None else 0, name=short_name(full),
                     name_full=full, device=device or None, grid=grid or None, block=block or None, metrics=metrics)


def read_details(header: list[str], rows: Iterator[tuple[int, list[str]]], source: str) -> Iterator[RawKernel]:
    """Long page: one row a (launch, metric); rule rows have an empty metric name and are skipped."""
    needed = ("ID", KERNEL_NAME, *DETAILS_HEADER)
    missing = [c for c in needed if c not in header]
    if missing:
        raise InputError(source, f"details CSV lacks the column(s) {', '.join(missing)}")
    launch_at, name_at, section_at, label_at, unit_at, value_at = (header.index(c) for c in needed)
    grid_at, block_at = _column(header, "Grid Size"), _column(header, "Block Size")
    shortest = max(launch_at, name_at, section_at, label_at, unit_at, value_at) + 1
    launches: dict[str, tuple[list[str], dict[str, float]]] = {}
    for line, row in rows:
        if len(row) < shortest:
            raise InputError(source, f"line {line} is truncated ({len(row)} fields, needs {shortest})")
        _, metrics = launches.setdefault(row[launch_at], (row, {}))
        label = row[label_at]
        if not label:
            continue
        name = label if label in C.WANTED else DETAILS_LABELS.get((row[section_at], label))
        if name:
            value = _scaled(row[value_at], unit_factor(row[unit_at]))
            if value is not None:
                metrics[name] = value
    for launch, (row, metrics) in launches.items():
        yield _identity(source, row[name_at], launch, _field(row, grid_at), _field(row, block_at), "", metrics)


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
