"""Roofline geometry shared by the static plot and the HTML report: one point per kernel of the
kernel view (`kernels.ranked`, so a point's number is the kernel's rank in the table), and the
roofs those kernels are judged against. A kernel is held to the roof its verdict reads
(analysis/verdict/roofs.py): its binding precision's peak at the clock it ran at, times its tensor path's
share (FlashAttention-2's mma.sync reaches 0.67 of the wgmma peak), and HBM at its DRAM clock. So
a point's height over its own roof is the verdict's roof %. Kernels held to one roof at different
clocks make that roof a band, lowest to highest figure, never one figure that none was held to.
A kernel without measured intensity is placed by SM busy against its family's datasheet ceiling
at that ceiling's ridge, and flagged hollow: never drawn as measured. A kernel measured doing no
FLOP (a copy) is listed apart, not drawn: it has no place on log axes, and placing it by SM busy
would draw a measured zero as unmeasured."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath

from ..analysis.categories import categorize
from ..analysis.verdict import roof_pct, verdict_roof
from ..analysis.verdict.placement import place
from ..analysis.verdict.roofs import flop_peak, hbm_peak
from ..ceilings import CeilingsFile, DeviceCeilings, DeviceFacts
from ..errors import KernelscopeError
from ..model import KernelRecord
from .kernels import Ranked, origin_labels, roof_name, shown, total_time

Held = tuple[float, float | None]  # a roof's figure for one kernel, and the clock it is held at (None: datasheet's)


@dataclass(frozen=True)
class Roof:
    key: str  # the verdict's ceiling key (with @path for a tensor roof)
    name: str  # as the key says it: "bf16 (mma.sync)", "fp32 SIMT", "HBM"
    unit: str
    datasheet: float  # the ceilings file's figure
    ratio: float  # the path's share of the chip's peak (1: the chip's peak)
    held: tuple[Held, ...]  # each distinct figure its kernels are held to, lowest first
    ridge: float  # FLOP/byte where its highest figure meets the highest HBM figure (memory: 0)

    @property
    def lo(self) -> float:
        return self.held[0][0]

    @property
    def hi(self) -> float:
        return self.held[-1][0]


@dataclass(frozen=True)
class Point:
    rank: int
    name: str  # the table's name (display_names: template arguments where two kernels share a name)
    origin: str | None  # the input it came from, where the points come from several
    launch: int | None  # its launch id, in the per-launch view
    ai: float  # FLOP/byte (measured, or the family ridge when hollow)
    tflops: float
    measured: bool
    bound: str
    time_share: float  # 0-1 of the summed kernel time
    roof: str | None  # the key of the compute roof it is held to
    roof_tflops: float | None  # that roof's figure for this kernel (at its clock)
    memory_tbps: float  # the HBM roof's figure for this kernel (at its DRAM clock)
    details: dict[str, str]  # what hovering it shows (one line each), figures with units


@dataclass(frozen=True)
class RooflineData:
    memory: Roof
    roofs: tuple[Roof, ...]  # compute roofs, lowest first
    points: tuple[Point, ...]  # in rank order
    unplaced: tuple[int, ...]  # ranks of kernels with nothing honest to place them by (no AI, no SM busy)
    no_flops: tuple[int, ...]  # ranks of kernels measured doing no FLOP: zero has no place on log axes

    @property
    def memory_key(self) -> str:
        return self.memory.key


def _short(key: str | None) -> str:
    return "no ceiling" if key is None else key.rsplit(".", 1)[-1]


def _fmt(value: float | None, spec: str, unit: str) -> str:
    return "unmeasured" if value is None else f"{value:{spec}} {unit}".rstrip()


def _as_shown(name: str, value: float | None) -> str:
    """A figure as the views show it (its declaration's scale, format and unit: columns.py)."""
    how = shown(name)
    return _fmt(None if value is None else value * how.scale, how.fmt, how.unit)


def _roof_name(cls: str, path: str | None) -> str:
    if cls.startswith("tensor_"):
        return f"{cls.removeprefix('tensor_')} ({path or 'path unknown'})"
    return f"{cls} SIMT"


@dataclass
class _Held:
    """A roof as kernels are found held to it."""

    name: str
    unit: str
    datasheet: float
    ratio: float
    held: set[Held]


def _hold(found: dict[str, _Held], key: str, figure: float, clock: float | None, spec: _Held) -> None:
    found.setdefault(key, spec).held.add((figure, clock))


def origins(rows: Sequence[Ranked], labels: Mapping[str, str] | None) -> dict[str, str] | None:
    """Report path -> the input's name as the reader gave it (`labels`, else the file's name, never
    this machine's path), when the rows come from several inputs; None when from one."""
    sources = sorted({r.group.source for r in rows})
    named = dict(labels or {})
    named.update({s: v for s, v in origin_labels([PurePath(s) for s in sources], sources).items() if s not in named})
    return named if len({named[s] for s in sources}) > 1 else None


def _measured(row: Ranked, dev: DeviceCeilings, share: float, origin: str | None, launch: int | None,
              details: dict[str, str], roofs: dict[str, _Held], memory: set[Held]) -> Point:
    a, r = row.lead, row.lead.record
    assert r.arithmetic_intensity is not None and r.achieved_tflops is not None
    hbm = hbm_peak(r, dev)
    mem, mem_clock = (hbm[0], hbm[1]) if hbm else (dev.memory.value or 0.0, None)
    memory.add((mem, mem_clock))
    cls = place(r, dev).binding_class
    peak = None if cls is None else flop_peak(r, dev, cls)
    if peak is not None and cls is not None:
        datasheet = dev.for_precision(cls).value
        assert datasheet is not None
        _hold(roofs, peak.key, peak.tflops, peak.clock_hz,
              _Held(_roof_name(cls, r.tensor_path), peak.unit, datasheet, peak.ratio, set()))
        if r.flops and r.duration_ns:
            pct = 100 * r.flops.get(cls, 0.0) / (r.duration_ns * 1e3) / peak.tflops
            details["drawn roof"] = (f"drawn roof: {_roof_name(cls, r.tensor_path)} {peak.tflops:.0f} {peak.unit}"
                                     f"{_at(peak.clock_hz)}; its {cls} work at {pct:.0f} % of it")
    return Point(row.rank, row.name, origin, launch, r.arithmetic_intensity, r.achieved_tflops, True, a.bound, share,
                 None if peak is None else peak.key, None if peak is None else peak.tflops, mem, details)


def _at(clock: float | None) -> str:
    return " (datasheet clock)" if clock is None else f" at {clock / 1e6:.0f} MHz"


def _hollow(row: Ranked, dev: DeviceCeilings, share: float, origin: str | None, launch: int | None,
            details: dict[str, str], roofs: dict[str, _Held], memory: set[Held]) -> Point | None:
    """Placed by SM busy against its family's datasheet ceiling, at that ceiling's ridge."""
    r: KernelRecord = row.lead.record
    cls = categorize(r.name, r.name_full)[1]
    c, mem = dev.for_precision(cls), dev.memory.value
    if r.sm_busy_pct is None or r.sm_busy_pct <= 0 or c.value is None or not mem:  # 0: no place on log axes
        return None
    memory.add((mem, None))
    _hold(roofs, c.key, c.value, None, _Held(_roof_name(cls, None), "TFLOP/s", c.value, 1.0, set()))
    details["placed by"] = f"SM busy {r.sm_busy_pct:.0f} % of {c.key} (AI unmeasured)"
    return Point(row.rank, row.name, origin, launch, c.value / mem, c.value * r.sm_busy_pct / 100, False,
                 row.lead.bound, share, c.key, c.value, mem, details)


def _details(row: Ranked, share: float, origin: str | None, launch: int | None) -> dict[str, str]:
    a, r = row.lead, row.lead.record
    time = _as_shown("duration_ns", row.total_ns)
    where = ", ".join(x for x in (origin, None if launch is None else f"launch {launch}") if x)
    out = {
        "kernel": f"#{row.rank} {row.name}" + (f" ({len(row.group.launches)} launches)"
                                              if len(row.group.launches) > 1 else ""),
        **({"from": f"from {where}"} if where else {}),
        "verdict": f"{a.bound} · {time} ({100 * share:.1f} % of time)",
        "figures": f"AI {_as_shown('arithmetic_intensity', r.arithmetic_intensity)} · "
                   f"{_as_shown('achieved_tflops', r.achieved_tflops)} · "
                   f"{_as_shown('achieved_dram_tbps', r.achieved_dram_tbps)}",
        "SoL": f"compute {_as_shown('pct_sol_compute', a.pct_sol_compute)} ({_short(a.compute_ceiling_key)}) · memory "
               f"{_as_shown('pct_sol_memory', a.pct_sol_memory)} ({_short(a.memory_ceiling_key)})",
    }
    stands = verdict_roof(a)
    if stands is not None:
        out["roof"] = f"verdict's roof: {roof_name(stands)} {_as_shown('pct_sol', roof_pct(a))}" + \
            (" (provisional: the busiest unit, not a %SoL)" if a.provisional else "")
    return out


def _roof(key: str, h: _Held, memory_hi: float) -> Roof:
    held = tuple(sorted(h.held, key=lambda fc: (fc[0], fc[1] or 0.0)))
    return Roof(key, h.name, h.unit, h.datasheet, h.ratio, held, held[-1][0] / memory_hi if memory_hi else 0.0)


def build(rows: Sequence[Ranked], table: CeilingsFile, hw: str | None = None,
          labels: Mapping[str, str] | None = None) -> RooflineData:
    """`labels`: report path -> the input's name (what the key says a kernel is from)."""
    if not rows:
        raise KernelscopeError("no kernels to draw")
    first = rows[0].lead
    dev = table.pick(first.record.device, hw, DeviceFacts.of(first.record.device, first.record.metrics))
    named = origins(rows, labels)
    per_launch = len({(r.group.source, r.group.name_full) for r in rows}) < len(rows)
    total_ns = total_time(rows)
    roofs: dict[str, _Held] = {}
    memory: set[Held] = set()
    points: list[Point] = []
    unplaced: list[int] = []
    no_flops: list[int] = []
    for row in rows:
        r = row.lead.record
        share = (row.total_ns or 0.0) / total_ns
        origin = None if named is None else named[row.group.source]
        launch = r.launch_id if per_launch else None
        details = _details(row, share, origin, launch)
        if r.arithmetic_intensity is not None and r.achieved_tflops is not None:
            if r.arithmetic_intensity <= 0 or r.achieved_tflops <= 0:
                no_flops.append(row.rank)
                continue
            points.append(_measured(row, dev, share, origin, launch, details, roofs, memory))
        elif (point := _hollow(row, dev, share, origin, launch, details, roofs, memory)) is not None:
            points.append(point)
        else:
            unplaced.append(row.rank)
    mem_value = dev.memory.value or 0.0
    hbm = _roof(dev.memory.key, _Held("HBM", "TB/s", mem_value, 1.0, memory or {(mem_value, None)}), 0.0)
    compute = sorted((_roof(k, h, hbm.hi) for k, h in roofs.items()), key=lambda x: (x.hi, x.key))
    return RooflineData(hbm, tuple(compute), tuple(points), tuple(unplaced), tuple(no_flops))
