"""The roofs a kernel is held to, each read over elapsed time at the clocks the kernel ran at: its
binding precision's tensor or SIMT peak (a tensor roof held at the kernel's instruction path), HBM,
L2, each SM pipe and the issue slots. A peak is a per-clock rate times a clock, and boost is not
held under load (a cuBLAS GEMM ran at 1.61 GHz against the 1.83 GHz the tensor peak assumes), so the
roof at the measured clock decides and the datasheet figure stands beside it. A collective is held
to its link instead (nvlink_roof): the link's rate is its own, with no clock to scale. bound.py picks."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from ... import catalogue as C
from ...ceilings import Ceiling, DeviceCeilings
from ...model import KernelRecord, Limiter, LimiterKind
from ..derive import arch, tensor_unseen
from ..quantities import size
from ..rules import LEADS_BY_PCT
from .placement import Placement

PIPE_NAMES: dict[str, str] = {
    "fma": "FMA pipe", "alu": "ALU pipe", "fp64": "FP64 pipe", "xu": "XU (special-function) pipe",
    "lsu": "LSU (load/store) pipe", "tensor": "tensor pipe",
}


def sm_clock(rec: KernelRecord) -> tuple[float | None, str]:
    """The SM clock a launch ran at, capped at the device's maximum: a kernel of a few µs reads above
    it (2.26 GHz on a 1.98 GHz H200, docs/hopper-measurements.md §5)."""
    clock, top = rec.sm_clock_hz, rec.max_sm_clock_hz
    if clock is not None and top and clock > top:
        return top, f"SM clock read {clock / 1e6:.0f} MHz, above the device maximum {top / 1e6:.0f} MHz: capped"
    return clock, ""


def _scaled(ceiling: Ceiling, clock: float | None, unit: str) -> tuple[float, float | None, str]:
    """The ceiling at the measured clock (or its datasheet figure, saying why), the clock it is
    held at (None: the datasheet's), and how it was had."""
    assert ceiling.value is not None
    roof = ceiling.at_clock(clock)
    if roof is None or clock is None or ceiling.clock_hz is None:
        why = "its clock is not sourced" if ceiling.clock_hz is None else "the kernel's clock was not collected"
        return ceiling.value, None, f"the {ceiling.called} figure: {why}"
    return roof, clock, (f"{ceiling.value:g} {unit} at {ceiling.clock_hz / 1e6:.0f} MHz, scaled to the measured "
                         f"{clock / 1e6:.0f} MHz")


class FlopPeak(NamedTuple):
    """The FLOP roof a precision class holds a kernel to, as its verdict reads it (and the roofline
    draws it): the chip's peak at the clock the kernel ran at, times its tensor path's share."""

    key: str  # the ceiling key, with @path for a tensor roof
    name: str  # "tensor bf16 roof (mma.sync)", "fp32 SIMT roof"
    unit: str
    tflops: float  # the roof
    chip: float  # the chip's peak at that clock (the datasheet figure when the clock is unknown)
    ratio: float  # the path's share of the chip's peak (1: the chip's peak)
    clock_hz: float | None  # the clock it is held at; None: the datasheet's
    how: str  # how the chip's figure was had
    notes: tuple[str, ...]  # what the roof is held to, where that is not the plain peak


def flop_peak(rec: KernelRecord, dev: DeviceCeilings, cls: str) -> FlopPeak | None:
    """The roof of precision class `cls` for this kernel; None when the device has no figure for it.
    A tensor roof is the chip's peak times its instruction path's share (mma.sync reaches about 2/3
    of the wgmma peak on Hopper)."""
    ceiling = dev.for_precision(cls)
    if ceiling.value is None:
        return None
    unit = "TOP/s" if cls == "tensor_int8" else "TFLOP/s"
    clock, capped = sm_clock(rec)
    chip, held_at, how = _scaled(ceiling, clock, unit)
    notes = [capped] if capped else []
    precision = cls.removeprefix("tensor_")
    tensor = cls.startswith("tensor_")
    name = f"tensor {precision} roof ({rec.tensor_path or 'path unknown'})" if tensor else f"{precision} SIMT roof"
    key = f"{ceiling.key}@{rec.tensor_path}" if tensor and rec.tensor_path else ceiling.key
    path = dev.path_roof(rec.tensor_path) if tensor else None
    ratio = 1.0 if path is None or path.ratio is None else path.ratio
    if path is not None and path.ratio is None:
        notes.append(f"no sourced {path.path} roof for {dev.hw_key}: held to the chip's peak")
    elif tensor and rec.tensor_path is None:
        notes.append("tensor path unknown: held to the chip's peak")
    return FlopPeak(key, name, unit, chip * ratio, chip, ratio, held_at, how, tuple(notes))


def flop_roof(rec: KernelRecord, dev: DeviceCeilings, p: Placement) -> Limiter | None:
    """The binding precision's roof (flop_peak), and how far the kernel is from it."""
    cls = p.binding_class
    if cls is None or p.pct_sol_compute is None or rec.flops is None or not rec.duration_ns:
        return None
    peak = flop_peak(rec, dev, cls)
    if peak is None:
        return None
    achieved = rec.flops[cls] / (rec.duration_ns * 1e3)
    unit, parts = peak.unit, list(peak.notes)
    how = peak.how  # how the chip's figure was had; a path's roof is a share of it
    if peak.ratio != 1.0:
        how = f"{rec.tensor_path} reaches {100 * peak.ratio:.0f} % of the chip's {peak.chip:.0f} {unit}: {how}"
        parts.append(f"{100 * achieved / peak.chip:.0f} % of the chip's roof")
    pct = 100 * achieved / peak.tflops
    sheet = dev.for_precision(cls)
    reading = "; ".join([f"{cls} {achieved:.1f} {unit} = {pct:.0f} % of {peak.tflops:.0f} {unit} ({how})",
                         *parts, f"{p.pct_sol_compute:.0f} % of the {sheet.value:g} {unit} {sheet.called} peak"])
    kind: LimiterKind = "tensor" if cls.startswith("tensor_") else "simt"
    return Limiter(kind, peak.key, peak.name, pct, p.pct_sol_compute, peak.clock_hz, reading)


def hbm_peak(rec: KernelRecord, dev: DeviceCeilings) -> tuple[float, float | None, str] | None:
    """The HBM roof at the DRAM clock the kernel ran at (TB/s), that clock (None: the datasheet's)
    and how it was had; None when the device has no figure."""
    return None if not dev.memory.value else _scaled(dev.memory, rec.dram_clock_hz, "TB/s")


def hbm_roof(rec: KernelRecord, dev: DeviceCeilings, p: Placement) -> Limiter | None:
    peak = hbm_peak(rec, dev)
    if rec.achieved_dram_tbps is None or p.pct_sol_memory is None or peak is None:
        return None
    roof, held_at, how = peak
    pct = 100 * rec.achieved_dram_tbps / roof
    kind = dev.memory_kind
    reading = (f"{kind} {rec.achieved_dram_tbps:.2f} TB/s = {pct:.0f} % of {roof:.2f} TB/s ({how}); "
               f"{p.pct_sol_memory:.0f} % of the {dev.memory.value:g} TB/s {dev.memory.called} figure")
    return Limiter("hbm", dev.memory.key, f"{kind} roof", pct, p.pct_sol_memory, held_at, reading)


def l2_share(rec: KernelRecord) -> float | None:
    """L2 bytes over DRAM bytes: about 1-2 for a stream through L2, more when L2 serves reuse."""
    return None if rec.l2_bytes is None or not rec.dram_bytes else rec.l2_bytes / rec.dram_bytes


def l2_roof(rec: KernelRecord) -> Limiter | None:
    """L2 bandwidth: its data paths' sectors (tag and data stage), not lts__throughput, which is the
    busiest L2 sub-unit (crossbar ports included) and reads high on kernels far from L2 bandwidth."""
    if rec.l2_sectors_pct is None:
        return None
    share = l2_share(rec)
    reading = (f"L2 {rec.l2_sectors_pct:.0f} % of its bandwidth (the busier of lts__t_sectors and lts__d_sectors, "
               "elapsed cycles)")
    if share is not None and rec.l2_bytes is not None:
        reading += f"; {size(rec.l2_bytes)} through L2 = {share:.1f}x the DRAM bytes"
    if rec.l2_throughput_pct is not None:
        reading += f"; lts__throughput (its busiest sub-unit) {rec.l2_throughput_pct:.0f} %"
    return Limiter("l2", C.L2_SECTOR_PCTS[0], "L2 roof", rec.l2_sectors_pct, None, None, reading)


def sm_busy_roof(rec: KernelRecord) -> Limiter | None:
    """ncu's SM throughput (its busiest SM unit), for a provisional verdict from a page that holds no
    pipe or issue figure (a SpeedOfLight details export): the compute side's only figure there."""
    if rec.sm_busy_pct is None or rec.pipe_busy or rec.issue_active_pct is not None:
        return None
    return Limiter("pipe", C.SM_BUSY, "SM (ncu Compute Throughput: its busiest unit)", rec.sm_busy_pct, None, None,
                   f"SM throughput {rec.sm_busy_pct:.0f} % of peak (ncu SpeedOfLight: its busiest SM unit; not a FLOP "
                   "rate)")


def dram_busy_roof(rec: KernelRecord) -> Limiter | None:
    """ncu's DRAM throughput, for a report with no DRAM byte counters (a provisional verdict)."""
    if rec.dram_throughput_pct is None:
        return None
    return Limiter("hbm", C.DRAM_PCT[0], "HBM (ncu DRAM throughput)", rec.dram_throughput_pct, None, None,
                   f"DRAM throughput {rec.dram_throughput_pct:.0f} % of peak (ncu SpeedOfLight; no DRAM byte counters)")


def memory_busy_roof(rec: KernelRecord) -> Limiter | None:
    """ncu's Memory Throughput (its busiest memory unit: L1, L2 or DRAM), for a provisional verdict,
    where it is the only figure of an L1-bound kernel (ncu SpeedOfLight's own memory side)."""
    if rec.memory_busy_pct is None:
        return None
    return Limiter("l2", C.MEM_BUSY, "memory units (ncu Memory Throughput: its busiest, L1 to DRAM)",
                   rec.memory_busy_pct, None, None,
                   f"Memory Throughput {rec.memory_busy_pct:.0f} % of peak (ncu SpeedOfLight: its busiest memory unit, "
                   "not a bandwidth)")


def _elapsed(active: float | None) -> Callable[[float], tuple[float, str]]:
    """A per-active-cycle share as a share of elapsed cycles, like the memory roofs, given the
    launch's SM-active share (its words made once a launch, not once a pipe)."""
    if active is None:
        return lambda pct: (pct, f"{pct:.0f} % of SM-active cycles (SM-active share not collected)")
    said = f"SM active {active:.{0 if active >= 1 else 1}f} %"
    return lambda pct: (pct * active / 100, f"{pct:.0f} % of active cycles, {said}")


def sm_roofs(rec: KernelRecord) -> list[Limiter]:
    """Each pipe and the issue slots. The tensor pipe gives way to the tensor FLOP roof when tensor
    work was counted: a pinned pipe is not peak FLOP on the mma.sync path (docs/hopper-measurements.md §1)."""
    tensor_work = any(v for k, v in (rec.flops or {}).items() if k.startswith("tensor_"))
    elapsed = _elapsed(rec.sm_active_pct)
    out = []
    for pipe, busy in (rec.pipe_busy or {}).items():
        if pipe == "tensor" and tensor_work:
            continue
        pct, how = elapsed(busy)
        out.append(Limiter("pipe", C.PIPES.get(pipe, C.TENSOR_PIPE), PIPE_NAMES.get(pipe, pipe), pct, None, None,
                           f"{PIPE_NAMES.get(pipe, pipe)} busy {pct:.0f} % of elapsed cycles ({how})"))
    if rec.issue_active_pct is not None:
        pct, how = elapsed(rec.issue_active_pct)
        out.append(Limiter("issue", C.ISSUE_ACTIVE, "issue slots", pct, None, None,
                           f"issue slots busy {pct:.0f} % of elapsed cycles ({how})"))
    return out


CAPTURE_NVLINK = ("capture it with --add nvlink (or ncu --set full) on a machine whose GPUs reach its peers over "
                  "NVLink")


def nvlink_roof(rec: KernelRecord, dev: DeviceCeilings) -> Limiter | None:
    """A collective's busier NVLink direction over one direction's bandwidth (half the ceilings'
    links.nvlink, a both-ways total): a ring all-reduce fills both ways, a send fills one, and either
    can reach the roof. None when a figure or the ceiling is not known (link_unmeasured says why)."""
    link = dev.link("nvlink")
    rate, both, roof = rec.nvlink_busier_way_bytes_per_s, rec.nvlink_bytes_per_s, link.each_way_tbps
    if rate is None or both is None or roof is None or link.both_ways_tbps is None:
        return None
    pct = 100 * rate / (roof * 1e12)
    reading = (f"NVLink {both / 1e9:.1f} GB/s received + sent ({C.NVL_RX} + {C.NVL_TX}), the busier way "
               f"{rate / 1e9:.1f} GB/s = {pct:.0f} % of {roof * 1e3:g} GB/s each way ({link.key}: "
               f"{link.both_ways_tbps * 1e3:g} GB/s both directions; the link's own rate: no clock scaling)")
    return Limiter("nvlink", link.key, "NVLink roof", pct, pct, None, reading)


def link_unmeasured(rec: KernelRecord, dev: DeviceCeilings) -> str:
    """Why a collective has no NVLink roof, and what capture gives it one."""
    link = dev.link("nvlink")
    if rec.nvlink_bytes_per_s is not None:
        return (f"NVLink {rec.nvlink_bytes_per_s / 1e9:.1f} GB/s received + sent, but {link.key} is not sourced "
                f"({link.source}): give the link's figure with --ceilings")
    if "nvlink_bytes_per_s" not in rec.unmeasured:
        return (f"{C.NO_NVLINK}: its traffic, if any, went over PCIe or the network, which kernelscope has no "
                f"counter or ceiling for; {CAPTURE_NVLINK}")
    return f"NVLink traffic not collected ({C.NVL_RX}, {C.NVL_TX}): {CAPTURE_NVLINK}"


def unsettled(rec: KernelRecord, p: Placement) -> str | None:
    """Why the report cannot settle a roofline verdict (no FLOP or DRAM bytes to place it, or tensor
    work whose FLOP were not collected), or None when it can."""
    names = arch(rec.metrics)
    unseen = tensor_unseen(rec.metrics, rec.tensor_pipe_active_pct, rec.flops_missing, names)
    if unseen is not None and rec.flops is not None:
        return unseen
    if p.pct_sol_compute is None and rec.flops is not None and rec.flops_missing and not rec.flops_total:
        return f"no FLOP counted, and FLOP not collected for {', '.join(rec.flops_missing)}"
    if p.pct_sol_compute is None or p.pct_sol_memory is None:
        missing = ", ".join(f for f in ("flops", "dram_bytes", "duration_ns") if f in rec.unmeasured)
        return f"{missing or 'a ceiling (' + (p.compute_ceiling_key or 'compute') + ')'} not measured"
    return None


def candidates(rec: KernelRecord, dev: DeviceCeilings, p: Placement, provisional: bool) -> list[Limiter]:
    """Every roof the record has figures for, highest first. Provisional: the per-unit figures alone
    (pipes, the tensor pipe among them, issue slots, L2, ncu's DRAM throughput), none a FLOP rate."""
    if provisional:  # the HBM roof needs no FLOP: measured bytes over time, when the device's bandwidth is known
        found = [hbm_roof(rec, dev, p) or dram_busy_roof(rec), l2_roof(rec), sm_busy_roof(rec), *sm_roofs(rec)]
        # ncu's busiest memory unit names the side only when it clearly leads (an L1-bound kernel whose DRAM and
        # pipes idle); beside a unit as busy (a GEMM's shared memory against its tensor pipe) it is no verdict
        unit = memory_busy_roof(rec)
        if unit is not None and unit.pct is not None and \
                unit.pct >= max((c.pct or 0.0 for c in found if c is not None), default=0.0) + LEADS_BY_PCT:
            found.append(unit)
    else:
        found = [flop_roof(rec, dev, p), hbm_roof(rec, dev, p), l2_roof(rec), *sm_roofs(rec)]
    return sorted((c for c in found if c is not None), key=lambda c: -(c.pct or 0.0))
