"""Small tables for verbs that list things: the ceilings a file holds, a campaign's gate results,
and the kernels a program ran. Built on the one table model, so every `--format` prints them the
same way."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from ..ceilings import Arch, DeviceCeilings
from .table import NAME, Col, Table


def ceilings_rows(devices: Iterable[DeviceCeilings], archs: Iterable[Arch] = ()) -> list[dict[str, Any]]:
    """One a ceiling: its key (what outputs cite), value with unit, the clock the figure is computed
    at (verdicts scale a peak to the clock the kernel ran at; None: not sourced, the figure is used
    as it is) and that clock's source, the devices it is for, how it was had (a datasheet entry, or
    derived from a report's attributes), the figure's source and, for a datasheet figure held against
    a report, what the report's attributes derive. A link's figure has no clock (its rate is its
    own); its unit says which directions it counts (rx+tx: both). Then each architecture's rates a
    SM a clock: what any GPU of it no entry names is derived from."""
    rows = []
    for dev in devices:
        match = ", ".join(dev.match) or "(only with --hw)"
        peaks = [("TB/s", dev.memory)]
        peaks += [("TOP/s" if name == "int8" else "TFLOP/s", c) for name, c in dev.compute.items()]
        rows += [{"key": c.key, "value": c.value, "unit": unit,
                  "clock_mhz": None if c.clock_hz is None else c.clock_hz / 1e6,
                  "clock_source": c.clock_source or None, "devices": match, "how": dev.how,
                  "source": c.source or None, "check": c.check or None}
                 for unit, c in peaks]
        rows += [{"key": link.key, "value": link.tbps,
                  "unit": "TB/s rx+tx" if link.bidirectional else "TB/s each way",
                  "clock_mhz": None, "clock_source": None, "devices": match, "how": dev.how,
                  "source": "; ".join(x for x in (link.source, link.direction_source) if x) or None, "check": None}
                 for link in dev.links.values()]
    for arch in archs:
        rows += [{"key": f"sm_{arch.cc.replace('.', '')}.per_sm_clock.{prec}", "value": rate,
                  "unit": "OP/clk/SM" if prec == "int8" else "FLOP/clk/SM", "clock_mhz": None, "clock_source": None,
                  "devices": f"any CC {arch.cc} GPU ({arch.name} {arch.chip}) no entry names", "how": "architecture",
                  "source": arch.source, "check": None}
                 for prec, rate in arch.per_sm_clock.items()]
    return rows


def ceilings_table(rows: list[dict[str, Any]], title: str) -> Table:
    """ceilings_rows as a table, without the clocks' sources (the JSON document holds them)."""
    cols = (Col("key", "key", code=True), Col("value", "value", lambda v: f"{v:g}", right=True),
            Col("unit", "unit"), Col("clock_mhz", "clock MHz", lambda v: f"{v:.0f}", right=True, drop=3),
            Col("devices", "selected by device name", drop=2), Col("source", "source", elide=NAME, drop=1),
            Col("check", "derived from the report", elide=NAME, drop=4))
    return Table(cols, [[row[c.key] for c in cols] for row in rows],
                 f"{title} (—: not sourced; a peak with a clock is scaled to the clock each kernel ran at)")


def check_table(cells: int, failures: Sequence[str], notes: Sequence[str]) -> Table:
    cols = (Col("level", "level", colour=lambda v: "red" if v == "FAIL" else None), Col("message", "message"))
    rows = [["FAIL", f] for f in failures] + [["note", n] for n in notes]
    return Table(cols, rows, notes=(f"{cells} cell(s), {len(failures)} failure(s)",))


class ListedKernel(Protocol):
    """A kernel as `kernelscope kernels` lists it (capture/inventory.py's Listed)."""

    @property
    def name(self) -> str: ...
    @property
    def launches(self) -> int | None: ...
    @property
    def total_ns(self) -> float | None: ...
    @property
    def select(self) -> str: ...


def kernels_table(rows: Sequence[ListedKernel], profiled: int, cap: int | None, program: str) -> Table:
    """Every kernel a program ran (timed: most GPU time first), with the --kernel value that selects it."""
    total = sum(r.total_ns or 0.0 for r in rows)
    cols = (Col("rank", "#", right=True), Col("name", "kernel", elide=NAME, code=True),
            Col("launches", "launches", right=True), Col("total_us", "total µs", lambda v: f"{v:,.1f}", right=True),
            Col("share", "time %", lambda v: f"{v:.1f}", right=True, drop=2),
            Col("select", "--kernel", elide=NAME, code=True, drop=1))
    out = [[i, r.name, r.launches, None if r.total_ns is None else r.total_ns / 1e3,
            None if r.total_ns is None or not total else 100 * r.total_ns / total, r.select]
           for i, r in enumerate(rows, 1)]
    if cap is None:
        notes = [f"{len(rows)} kernel(s) of {program}, by the names ncu lists (launches and time not counted: "
                 "--timed N profiles the first N launches with their duration)"]
    else:
        notes = [f"{len(rows)} kernel(s) in {profiled:,} launch(es) of {program}; GPU time from "
                 "gpu__time_duration.sum (one pass a launch, under ncu: a listing, not a benchmark)"]
    if cap is not None and profiled >= cap:
        notes.append(f"the first {cap:,} launches only (a larger --timed N lists more): later kernels may be missing")
    return Table(cols, out, "kernels the program ran", tuple(notes))
