"""Small tables for verbs that list things: the ceilings a file holds, and a campaign's gate
results. Built on the one table model, so every `--format` prints them the same way."""

from __future__ import annotations

from collections.abc import Sequence

from ..ceilings import CeilingsFile
from .table import NAME, Col, Table


def ceilings_table(cf: CeilingsFile) -> Table:
    """One row a ceiling: its key (what outputs cite), value with unit, the devices it is for."""
    cols = (Col("key", "key", code=True), Col("value", "value", lambda v: f"{v:g}", right=True),
            Col("unit", "unit"), Col("devices", "selected by device name", drop=2),
            Col("source", "source", elide=NAME, drop=1))
    rows = []
    for dev in cf.devices.values():
        match = ", ".join(dev.match) or "(only with --hw)"
        rows.append([dev.memory.key, dev.memory.value, "TB/s", match, dev.memory.source])
        for name, c in dev.compute.items():
            rows.append([c.key, c.value, "TOP/s" if name == "int8" else "TFLOP/s", match, c.source or "—"])
    return Table(cols, rows, f"ceilings in {cf.origin} (null: no sourced figure, shown as —)")


def check_table(cells: int, failures: Sequence[str], notes: Sequence[str]) -> Table:
    cols = (Col("level", "level", colour=lambda v: "red" if v == "FAIL" else None), Col("message", "message"))
    rows = [["FAIL", f] for f in failures] + [["note", n] for n in notes]
    return Table(cols, rows, notes=(f"{cells} cell(s), {len(failures)} failure(s)",))

