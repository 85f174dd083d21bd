"""Roofline geometry shared by the static plot and the HTML report: roofs from the ceilings file
(named by key), and one point per kernel of the kernel view (`kernels.ranked`, so a point's number
is the kernel's rank in the table). Each point names the roof it is held to: a kernel is judged
against the peak of its own precision, and the plot links it to that roof, not the nearest one.
A kernel without measured intensity is placed by SM busy against its family's ceiling at that
ceiling's ridge, and flagged hollow: never drawn as measured. A kernel measured doing no FLOP (a
copy) is listed apart, not drawn: it has no place on log axes, and placing it by SM busy would
draw a measured zero as unmeasured."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..analysis.categories import categorize
from ..ceilings import CeilingsFile
from ..errors import KernelscopeError
from .kernels import Ranked, total_time


@dataclass(frozen=True)
class Roof:
    key: str
    tflops: float
    ridge: float  # FLOP/byte


@dataclass(frozen=True)
class Point:
    rank: int
    name: str
    ai: float  # FLOP/byte (measured, or the family ridge when hollow)
    tflops: float
    measured: bool
    bound: str
    time_share: float  # 0-1 of the summed kernel time
    roof: str | None  # the key of the compute roof it is held to
    details: dict[str, str]  # what hovering it shows (one line each), figures with units


@dataclass(frozen=True)
class RooflineData:
    memory_key: str
    memory_tbps: float
    roofs: tuple[Roof, ...]
    points: tuple[Point, ...]  # in rank order
    unplaced: tuple[int, ...]  # ranks of kernels with nothing honest to place them by (no AI, no SM busy)
    no_flops: tuple[int, ...]  # ranks of kernels measured doing no FLOP: zero has no place on log axes


def _short(key: str | None) -> str:
    return "no ceiling" if key is None else key.rsplit(".", 1)[-1]


def _fmt(value: float | None, spec: str, unit: str) -> str:
    return "unmeasured" if value is None else f"{value:{spec}} {unit}".rstrip()


def build(rows: Sequence[Ranked], table: CeilingsFile, hw: str | None = None) -> RooflineData:
    if not rows:
        raise KernelscopeError("no kernels to draw")
    first = rows[0].lead
    dev = table.pick(first.record.device, hw or first.hw_key)
    mem = dev.memory.value or 0.0
    total_ns = total_time(rows)
    roofs: dict[str, Roof] = {}
    points: list[Point] = []
    unplaced: list[int] = []
    no_flops: list[int] = []
    for row in rows:
        a, r = row.lead, row.lead.record
        share = (row.total_ns or 0.0) / total_ns
        time = _fmt(None if row.total_ns is None else row.total_ns / 1e3, ".1f", "µs")
        details = {
            "kernel": f"#{row.rank} {row.name}" + (f" ({len(row.group.launches)} launches)"
                                                  if len(row.group.launches) > 1 else ""),
            "verdict": f"{a.bound} · {time} ({100 * share:.1f} % of time)",
            "figures": f"AI {_fmt(r.arithmetic_intensity, '.1f', 'FLOP/B')} · "
                       f"{_fmt(r.achieved_tflops, '.1f', 'TFLOP/s')} · {_fmt(r.achieved_dram_tbps, '.2f', 'TB/s')}",
            "SoL": f"compute {_fmt(a.pct_sol_compute, '.0f', '%')} ({_short(a.compute_ceiling_key)}) · memory "
                   f"{_fmt(a.pct_sol_memory, '.0f', '%')} ({_short(a.memory_ceiling_key)})",
        }
        if r.arithmetic_intensity is not None and r.achieved_tflops is not None:
            if r.arithmetic_intensity <= 0 or r.achieved_tflops <= 0:
                no_flops.append(row.rank)
                continue
            ceiling = (a.compute_ceiling_key, a.compute_ceiling_tflops)
            point = Point(row.rank, row.name, r.arithmetic_intensity, r.achieved_tflops, True, a.bound, share,
                          a.compute_ceiling_key, details)
        else:
            c = dev.for_precision(categorize(r.name, r.name_full)[1])
            if r.sm_busy_pct is None or r.sm_busy_pct <= 0 or c.value is None or not mem:  # 0: no place on log axes
                unplaced.append(row.rank)
                continue
            ceiling = (c.key, c.value)
            details["placed by"] = f"SM busy {r.sm_busy_pct:.0f} % of {c.key} (AI unmeasured)"
            point = Point(row.rank, row.name, c.value / mem, c.value * r.sm_busy_pct / 100, False, a.bound, share,
                          c.key, details)
        key, tflops = ceiling
        if key and tflops and mem:
            roofs[key] = Roof(key, tflops, tflops / mem)
        points.append(point)
    return RooflineData(dev.memory.key, mem, tuple(sorted(roofs.values(), key=lambda x: x.tflops)),
                        tuple(points), tuple(unplaced), tuple(no_flops))
