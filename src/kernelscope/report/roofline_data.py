"""Roofline geometry shared by the static plot and the HTML report: roofs from the ceilings file
(named by key), and one point per kernel. A kernel without measured intensity is placed by SM busy
against its family's ceiling at that ceiling's ridge, and flagged hollow: never drawn as measured."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..analysis.categories import categorize
from ..ceilings import CeilingsFile
from ..errors import KernelscopeError
from ..model import Assessment


@dataclass(frozen=True)
class Roof:
    key: str
    tflops: float
    ridge: float  # FLOP/byte


@dataclass(frozen=True)
class Point:
    label: str
    ai: float  # FLOP/byte (measured, or the family ridge when hollow)
    tflops: float
    measured: bool
    bound: str
    time_share: float  # 0-1 of the summed kernel time
    details: dict[str, str]


@dataclass(frozen=True)
class RooflineData:
    memory_key: str
    memory_tbps: float
    roofs: tuple[Roof, ...]
    points: tuple[Point, ...]


def _fmt(value: float | None, spec: str, unit: str) -> str:
    return "unmeasured" if value is None else f"{value:{spec}} {unit}"


def build(items: Sequence[Assessment], table: CeilingsFile, hw: str | None = None) -> RooflineData:
    if not items:
        raise KernelscopeError("no kernels to draw")
    dev = table.pick(items[0].record.device, hw or items[0].hw_key)
    mem = dev.memory.value or 0.0
    total_ns = sum(a.record.duration_ns or 0 for a in items) or 1.0
    classes = {a.record.dominant_precision for a in items if a.record.dominant_precision}
    points = []
    for a in items:
        r = a.record
        category, family = categorize(r.name, r.name_full)
        details = {
            "kernel": r.name, "category": category, "bound": a.bound,
            "time": _fmt(None if r.duration_ns is None else r.duration_ns / 1e3, ".1f", "µs"),
            "AI": _fmt(r.arithmetic_intensity, ".1f", "FLOP/B"),
            "TFLOP/s": _fmt(r.achieved_tflops, ".1f", ""), "TB/s": _fmt(r.achieved_dram_tbps, ".2f", ""),
            "%SoL compute": _fmt(a.pct_sol_compute, ".0f", f"% of {a.compute_ceiling_key}"),
            "%SoL memory": _fmt(a.pct_sol_memory, ".0f", f"% of {a.memory_ceiling_key}"),
            "occupancy": _fmt(r.achieved_occupancy_pct, ".0f", "%"),
        }
        share = (r.duration_ns or 0) / total_ns
        if r.arithmetic_intensity and r.achieved_tflops:
            points.append(Point(r.name, r.arithmetic_intensity, r.achieved_tflops, True, a.bound, share, details))
            continue
        ceiling = dev.for_precision(family)
        if r.sm_busy_pct is None or ceiling.value is None or not mem:
            continue  # nothing honest to place it by
        classes.add(family)
        details["placed by"] = f"SM busy {r.sm_busy_pct:.0f} % of {ceiling.key} (AI unmeasured)"
        points.append(Point(f"{r.name} (AI unmeasured)", ceiling.value / mem, ceiling.value * r.sm_busy_pct / 100,
                            False, a.bound, share, details))
    roofs = []
    for cls in sorted(classes):
        c = dev.for_precision(cls)
        if c.value and mem:
            roofs.append(Roof(c.key, c.value, c.value / mem))
    return RooflineData(dev.memory.key, mem, tuple(sorted(set(roofs), key=lambda x: x.tflops)), tuple(points))
