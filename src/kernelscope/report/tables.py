"""Assessments -> plain rows: the JSON kernel object (schema_version 1) and flat CSV rows.

Field names carry their unit (duration_ns, dram_bytes, achieved_tflops, *_pct on a 0-100
scale); absent figures are null / empty, never 0.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from ..model import Assessment, KernelRecord

SCHEMA_VERSION = 1

UNITS: dict[str, str] = {
    "duration_ns": "ns",
    "flops": "FLOP (int8: OP) per launch",
    "dram_bytes": "byte (DRAM read + write)",
    "arithmetic_intensity": "FLOP/byte of DRAM traffic",
    "achieved_tflops": "TFLOP/s",
    "achieved_dram_tbps": "TB/s",
    "ridge_flops_per_byte": "FLOP/byte",
    "compute_ceiling_tflops": "TFLOP/s (value at compute_ceiling_key)",
    "memory_ceiling_tbps": "TB/s (value at memory_ceiling_key)",
    "*_pct": "percent, 0-100",
    "warp_stalls": "percent of stalled warp-cycles by reason, sums to 100",
    "shared_mem_per_block_bytes": "byte (static + dynamic)",
    "registers_per_thread": "register",
    "achieved_active_warps_per_sm": "warp",
    "waves_per_sm": "waves",
    "sm_busy_pct": "ncu Compute (SM) Throughput, % of peak; not a FLOP rate",
}


def record_dict(rec: KernelRecord) -> dict[str, Any]:
    d = asdict(rec)
    flops = d.pop("flops")
    d["flops"] = None if flops is None else {"total": sum(flops.values()), **flops}
    d["unmeasured"] = list(rec.unmeasured)
    d["notes"] = list(rec.notes)
    return d


def kernel_dict(item: Assessment | KernelRecord) -> dict[str, Any]:
    if isinstance(item, KernelRecord):
        return record_dict(item)
    d = record_dict(item.record)
    d.update(
        hw_key=item.hw_key,
        compute_ceiling_key=item.compute_ceiling_key,
        compute_ceiling_tflops=item.compute_ceiling_tflops,
        memory_ceiling_key=item.memory_ceiling_key,
        memory_ceiling_tbps=item.memory_ceiling_tbps,
        ridge_flops_per_byte=item.ridge_flops_per_byte,
        pct_sol_compute=item.pct_sol_compute,
        pct_sol_memory=item.pct_sol_memory,
        bound=item.bound,
        verdict=item.verdict,
        limiters=list(item.limiters),
        next_levers=[asdict(lv) for lv in item.next_levers],
        analytic=None if item.analytic is None else dict(item.analytic),
        pct_of_achievable=None if item.achievable is None else dict(item.achievable),
    )
    if item.pct_sol_compute is None and "pct_sol_compute" not in d["unmeasured"]:
        d["unmeasured"].append("pct_sol_compute")
    if item.pct_sol_memory is None and "pct_sol_memory" not in d["unmeasured"]:
        d["unmeasured"].append("pct_sol_memory")
    return d


def flat_row(item: Assessment | KernelRecord) -> dict[str, Any]:
    """One CSV row: nested maps become prefixed columns, lists become ' | '-joined text."""
    d = kernel_dict(item)
    row: dict[str, Any] = {}
    for key, value in d.items():
        if key in {"flops", "warp_stalls", "block_limits", "analytic", "pct_of_achievable"}:
            for sub, v in (value or {}).items():
                row[f"{key}.{sub}"] = v
            if value is None:
                row[key] = None
        elif key == "next_levers":
            row["next_levers"] = " | ".join(lv["action"] for lv in value)
        elif isinstance(value, list):
            row[key] = " | ".join(str(v) for v in value)
        else:
            row[key] = value
    return row
