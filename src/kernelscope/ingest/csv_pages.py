"""Readers for ncu's CSV exports: `--page raw --csv` (wide) and `--page details --csv` (long).

Both carry the same identity columns; numbers may hold thousands separators and units are scaled
per value, so everything goes through `units` before it reaches a RawKernel.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

from .. import catalogue as C
from ..errors import InputError
from ..model import RawKernel
from .names import short_name
from .units import parse_number, unit_factor

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


def _identity(row: dict[str, str], source: str, extra: dict[str, float], device: str | None) -> RawKernel:
    full = row[KERNEL_NAME]
    return RawKernel(
        source=source,
        launch_id=int(parse_number(row.get("ID", "")) or 0),
        name=short_name(full),
        name_full=full,
        device=device,
        grid=row.get("Grid Size") or None,
        block=row.get("Block Size") or None,
        metrics=extra,
    )


def read_raw(rows: list[list[str]], source: str) -> Iterator[RawKernel]:
    """Wide page: header row, units row, then one row a launch."""
    header = rows[0]
    if len(rows) < 2:
        raise InputError(source, "raw CSV has a header but no units row")
    units = rows[1]
    wanted = [(i, h, unit_factor(units[i] if i < len(units) else "")) for i, h in enumerate(header) if h in C.WANTED]
    device_col = header.index(C.DEVICE_NAME) if C.DEVICE_NAME in header else None
    for line, row in enumerate(rows[2:], start=3):
        if len(row) != len(header):
            raise InputError(source, f"line {line} has {len(row)} fields, the header has {len(header)}")
        metrics = {}
        for i, name, factor in wanted:
            value = parse_number(row[i])
            if value is not None:
                metrics[name] = value * factor
        device = row[device_col] if device_col is not None and row[device_col] else None
        yield _identity(dict(zip(header, row, strict=True)), source, metrics, device)


def read_details(rows: list[list[str]], source: str) -> Iterator[RawKernel]:
    """Long page: one row a (launch, metric); rule rows have an empty metric name and are skipped."""
    header = rows[0]
    col = {h: i for i, h in enumerate(header)}
    launches: dict[str, tuple[dict[str, str], dict[str, float]]] = {}
    for line, row in enumerate(rows[1:], start=2):
        if len(row) < len(DETAILS_HEADER) + 1:
            raise InputError(source, f"line {line} is truncated")
        fields = dict(zip(header, row, strict=False))  # rule rows may carry extra columns
        _, metrics = launches.setdefault(fields["ID"], (fields, {}))
        label = fields["Metric Name"]
        if not label:
            continue
        name = label if label in C.WANTED else DETAILS_LABELS.get((fields["Section Name"], label))
        value = parse_number(row[col["Metric Value"]])
        if name and value is not None:
            metrics[name] = value * unit_factor(fields["Metric Unit"])
    for fields, metrics in launches.values():
        yield _identity(fields, source, metrics, None)


def read(path: Path, text: str, display: str | None = None) -> Iterator[RawKernel]:
    """Pick the page by its header, not the file name."""
    source = display or str(path)
    rows = [r for r in csv.reader(text.splitlines()) if r]
    if not rows or KERNEL_NAME not in rows[0]:
        raise InputError(source, f'CSV has no "{KERNEL_NAME}" column: not an ncu --csv export')
    if all(h in rows[0] for h in DETAILS_HEADER):
        return read_details(rows, source)
    return read_raw(rows, source)
