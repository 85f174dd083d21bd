"""Place a KernelRecord against its device's ceilings: %SoL compute and memory, and the ridge."""

from __future__ import annotations

from typing import NamedTuple

from ...ceilings import Ceiling, DeviceCeilings
from ...model import KernelRecord
from ..rules import MINOR_SHARE


class Placement(NamedTuple):
    """A launch on its device's roofline: the ceilings it is held to and its %SoL of each."""

    binding_class: str | None  # the precision class whose time at its peak is longest
    compute_ceiling_key: str | None
    compute_ceiling_tflops: float | None
    memory_ceiling_key: str
    memory_ceiling_tbps: float | None
    ridge_flops_per_byte: float | None
    pct_sol_compute: float | None
    pct_sol_memory: float | None
    notes: tuple[str, ...]


def place(rec: KernelRecord, dev: DeviceCeilings) -> Placement:
    """Each precision class runs on its own pipe at its own peak (an fp8 GEMM against the fp8
    peak, fp32 work against fp32), so the compute speed of light is the slowest class's time at
    peak: %SoL compute = that time over the measured duration, cited by that class's ceiling."""
    notes: list[str] = []
    mem = dev.memory
    pct_mem = None
    if rec.achieved_dram_tbps is not None and mem.value:
        pct_mem = 100.0 * rec.achieved_dram_tbps / mem.value
    total = rec.flops_total
    if rec.flops is None or not total or not rec.duration_ns:  # no work counted: 0 % only if no class is missing
        zero = total == 0 and not rec.flops_missing
        return Placement(None, None, None, mem.key, mem.value, None, 0.0 if zero else None, pct_mem, ())
    at_peak_ns: dict[str, float] = {}
    ceilings: dict[str, Ceiling] = {}
    for cls, flop in rec.flops.items():
        if flop == 0:
            continue
        ceiling = dev.for_precision(cls)
        if ceiling.value is None:
            if flop / total >= MINOR_SHARE:
                notes.append(f"no ceiling for {ceiling.key}: compute %SoL unknown")
                return Placement(cls, ceiling.key, None, mem.key, mem.value, None, None, pct_mem, tuple(notes))
            share = 100 * flop / total
            notes.append(f"{cls} work ({share:.2f} % of FLOP) has no ceiling ({ceiling.key}); left out of %SoL")
            continue
        at_peak_ns[cls] = flop / (ceiling.value * 1e3)  # TFLOP/s = 1e3 FLOP/ns
        ceilings[cls] = ceiling
    binding_cls = max(at_peak_ns, key=lambda c: at_peak_ns[c])
    binding = ceilings[binding_cls]
    assert binding.value is not None
    if rec.dominant_precision and binding.key != dev.for_precision(rec.dominant_precision).key:
        notes.append(f"{binding.key} binds although {rec.dominant_precision} holds most FLOP")
    ridge = binding.value / mem.value if mem.value else None  # (TFLOP/s)/(TB/s) = FLOP/byte
    pct_comp = 100.0 * at_peak_ns[binding_cls] / rec.duration_ns
    return Placement(binding_cls, binding.key, binding.value, mem.key, mem.value, ridge, pct_comp, pct_mem,
                     tuple(notes))
