"""The one column spec for a kernel: the JSON kernel object, CSV and Parquet columns, campaign
cells, HTML tables and `kernel_internals` all take their names, units and values from here.

A published schema that fixes other names (inference_perfbench_v1's `kernel_internals`) is mapped
in one table at the bottom. The JSON schema in `schema/` is generated from this file
(`python3 -m kernelscope.columns > schema/kernel.schema.json`) and outputs are tested against it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

from .analysis.categories import categorize
from .model import Assessment, KernelRecord

SCHEMA_VERSION = 2
Kind = Literal["number", "integer", "text", "map", "list"]


@dataclass(frozen=True)
class Column:
    name: str
    kind: Kind
    unit: str  # "" for text; every figure carries its unit here
    doc: str
    get: Callable[[Any], Any]  # of a KernelRecord (record columns) or an Assessment (the rest)
    nullable: bool = True


def binding_sol(a: Assessment) -> tuple[float | None, str | None]:
    """The %SoL against the roof that binds (the higher one), and its ceiling key."""
    if a.bound == "unmeasured":
        return None, None
    pc, pm = a.pct_sol_compute or 0.0, a.pct_sol_memory or 0.0
    return (pc, a.compute_ceiling_key) if pc >= pm else (pm, a.memory_ceiling_key)


def _r(attr: str) -> Callable[[KernelRecord], Any]:
    return lambda r: getattr(r, attr)


def _a(attr: str) -> Callable[[Assessment], Any]:
    return lambda a: getattr(a, attr)


def _flops(r: KernelRecord) -> dict[str, float] | None:
    return None if r.flops is None else {"total": sum(r.flops.values()), **r.flops}


def _map(attr: str) -> Callable[[KernelRecord], Any]:
    return lambda r: None if getattr(r, attr) is None else dict(getattr(r, attr))


def _unmeasured(a: Assessment) -> list[str]:
    names = list(a.record.unmeasured)
    names += [n for n, v in (("pct_sol_compute", a.pct_sol_compute), ("pct_sol_memory", a.pct_sol_memory))
              if v is None and n not in names]
    return names


def _num(name: str, unit: str, doc: str, get: Callable[[Any], Any] | None = None) -> Column:
    return Column(name, "number", unit, doc, get or _r(name))


RECORD: tuple[Column, ...] = (
    Column("source", "text", "", "the report the launch came from", _r("source"), nullable=False),
    Column("launch_id", "integer", "", "the launch's ID in its report (ncu's ID column)", _r("launch_id"),
           nullable=False),
    Column("name", "text", "", "kernel base name (function)", _r("name"), nullable=False),
    Column("name_full", "text", "", "demangled kernel name", _r("name_full"), nullable=False),
    Column("category", "text", "", "kernel category (analysis/categories.py)",
           lambda r: categorize(r.name, r.name_full)[0], nullable=False),
    Column("device", "text", "", "GPU name as ncu reports it", _r("device")),
    Column("grid", "text", "", "grid dimensions (x, y, z)", _r("grid")),
    Column("block", "text", "", "block dimensions (x, y, z)", _r("block")),
    _num("duration_ns", "ns", "gpu__time_duration.sum of this launch"),
    Column("flops", "map", "FLOP per launch (int8: OP)", "work by precision class, with total; null when no "
           "FLOP counter was collected", _flops),
    Column("flops_missing", "list", "", "precision classes whose counters were not collected",
           lambda r: list(r.flops_missing), nullable=False),
    Column("dominant_precision", "text", "", "precision class holding most FLOP", _r("dominant_precision")),
    Column("tensor_path", "text", "", "tensor instruction path: wgmma or mma.sync", _r("tensor_path")),
    _num("dram_bytes", "byte", "DRAM bytes read + written"),
    _num("l2_bytes", "byte", "L2 bytes (lts__t_bytes.sum)"),
    _num("arithmetic_intensity", "FLOP/byte", "FLOP per DRAM byte"),
    _num("achieved_tflops", "TFLOP/s", "FLOP / duration"),
    _num("achieved_dram_tbps", "TB/s", "DRAM bytes / duration"),
    _num("sm_clock_hz", "Hz", "SM clock the launch ran at (sm__cycles_elapsed.avg.per_second)"),
    _num("dram_clock_hz", "Hz", "DRAM clock the launch ran at"),
    _num("sm_busy_pct", "% of peak", "ncu Compute (SM) Throughput; not a FLOP rate"),
    _num("memory_busy_pct", "% of peak", "ncu Memory Throughput"),
    _num("sm_active_pct", "% of elapsed cycles", "SM cycles with work"),
    _num("issue_active_pct", "% of peak", "ncu Issue Slots Busy"),
    _num("dram_throughput_pct", "% of peak", "ncu DRAM Throughput"),
    _num("l2_throughput_pct", "% of peak", "ncu L2 Cache Throughput"),
    _num("tensor_pipe_active_pct", "% of peak", "tensor pipe active cycles"),
    Column("pipe_busy", "map", "% of peak while SM active", "busy share per SM pipe (fma, alu, fp64, xu, lsu, "
           "tensor)", _map("pipe_busy")),
    _num("achieved_occupancy_pct", "% of max warps", "achieved occupancy"),
    _num("theoretical_occupancy_pct", "% of max warps", "theoretical occupancy"),
    _num("achieved_active_warps_per_sm", "warp", "achieved active warps per SM"),
    _num("registers_per_thread", "register", "registers per thread"),
    _num("shared_mem_per_block_bytes", "byte", "shared memory per block: static + dynamic + driver-reserved"),
    _num("shared_mem_static_bytes", "byte", "static shared memory per block"),
    _num("shared_mem_dynamic_bytes", "byte", "dynamic shared memory per block"),
    _num("shared_mem_driver_bytes", "byte", "shared memory the driver reserves per block"),
    Column("occupancy_limiter", "text", "", "what limits blocks per SM (registers, shared_mem, warps, blocks)",
           _r("occupancy_limiter")),
    Column("block_limits", "map", "blocks per SM", "blocks per SM each resource allows", _map("block_limits")),
    _num("waves_per_sm", "waves", "launch waves per SM"),
    _num("branch_divergence_pct", "% of branch targets", "branch targets not uniform across the warp"),
    _num("simt_efficiency_pct", "% of 32 threads", "active threads per executed instruction"),
    Column("warp_stalls", "map", "% of stalled warp-cycles", "stall reasons, sums to 100", _map("warp_stalls")),
    Column("ncu_rules", "list", "", "ncu's own rule results stored in the report",
           lambda r: [asdict(x) for x in r.ncu_rules], nullable=False),
    Column("notes", "list", "", "how figures were derived where it matters", lambda r: list(r.notes),
           nullable=False),
)
PLACED: tuple[Column, ...] = (
    Column("hw_key", "text", "", "ceilings entry used", _a("hw_key"), nullable=False),
    Column("compute_ceiling_key", "text", "", "the compute ceiling the kernel is held to", _a("compute_ceiling_key")),
    _num("compute_ceiling_tflops", "TFLOP/s", "value at compute_ceiling_key", _a("compute_ceiling_tflops")),
    Column("memory_ceiling_key", "text", "", "the memory ceiling", _a("memory_ceiling_key"), nullable=False),
    _num("memory_ceiling_tbps", "TB/s", "value at memory_ceiling_key", _a("memory_ceiling_tbps")),
    _num("ridge_flops_per_byte", "FLOP/byte", "ridge point of the binding roofs", _a("ridge_flops_per_byte")),
    _num("pct_sol_compute", "% of SoL", "compute speed of light", _a("pct_sol_compute")),
    _num("pct_sol_memory", "% of SoL", "memory speed of light", _a("pct_sol_memory")),
    _num("pct_sol", "% of SoL", "%SoL against the roof that binds", lambda a: binding_sol(a)[0]),
    Column("ceiling_key", "text", "", "the ceiling pct_sol is against", lambda a: binding_sol(a)[1]),
    Column("bound", "text", "", "compute | memory | latency | unmeasured", _a("bound"), nullable=False),
    Column("verdict", "text", "", "the verdict in one line", _a("verdict"), nullable=False),
    Column("limiters", "list", "", "what limits it, with the figures", lambda a: list(a.limiters), nullable=False),
    Column("next_levers", "list", "", "ranked levers: rule, action, expected, confirm, gain, cost",
           lambda a: [asdict(lv) for lv in a.next_levers], nullable=False),
    Column("analytic", "map", "", "a harness op's analytic work and counted/analytic ratios",
           lambda a: None if a.analytic is None else dict(a.analytic)),
    Column("pct_of_achievable", "map", "", "%SoL against measured (achievable) ceilings",
           lambda a: None if a.achievable is None else dict(a.achievable)),
    Column("unmeasured", "list", "", "figures whose counters were not collected", _unmeasured, nullable=False),
)
COLUMNS: tuple[Column, ...] = RECORD + PLACED
BY_NAME: dict[str, Column] = {c.name: c for c in COLUMNS}
_OF_RECORD = frozenset(c.name for c in RECORD)
UNITS: dict[str, str] = {c.name: c.unit for c in COLUMNS if c.unit}

# inference_perfbench_v1 `kernel_internals.per_kernel.<name>` keys -> our column names
PERFBENCH_V1: dict[str, str] = {
    "achieved_occupancy_pct": "achieved_occupancy_pct",
    "theoretical_occupancy_pct": "theoretical_occupancy_pct",
    "dram_throughput_pct_peak": "dram_throughput_pct",
    "sm_throughput_pct_peak": "sm_busy_pct",
    "regs_per_thread": "registers_per_thread",
    "smem_per_block_bytes": "shared_mem_per_block_bytes",
    "block_limit_factor": "occupancy_limiter",
    "arithmetic_intensity": "arithmetic_intensity",
    "pct_sol": "pct_sol",
    "ceiling_key": "ceiling_key",
    "bound": "bound",
}


def kernel_object(a: Assessment) -> dict[str, Any]:
    """The JSON kernel object: every column, nulls where unmeasured."""
    return {**{c.name: c.get(a.record) for c in RECORD}, **{c.name: c.get(a) for c in PLACED}}


def value(a: Assessment, name: str) -> Any:
    """One column of one launch: what kernel_object(a)[name] holds, without building the rest."""
    return BY_NAME[name].get(a.record if name in _OF_RECORD else a)


def record_object(rec: KernelRecord) -> dict[str, Any]:
    """A KernelRecord alone (no ceilings): its own columns, with what was not measured."""
    return {**{c.name: c.get(rec) for c in RECORD}, "unmeasured": list(rec.unmeasured)}


def flatten(obj: Mapping[str, Any]) -> dict[str, Any]:
    """One flat row (CSV, Parquet): maps become `name.key` columns, lists ' | '-joined text
    (levers and rule results by their first field)."""
    row: dict[str, Any] = {}
    for name, value in obj.items():
        kind = BY_NAME[name].kind if name in BY_NAME else None
        if kind == "map" or isinstance(value, Mapping):
            for sub, v in (value or {}).items():
                row[f"{name}.{sub}"] = v
            if value is None:
                row[name] = None
        elif isinstance(value, list):
            row[name] = " | ".join(_text(v) for v in value)
        else:
            row[name] = value
    return row


def _text(value: Any) -> str:
    if isinstance(value, Mapping):
        first = next(iter(value.values()), "")
        return str(value.get("action") or value.get("title") or first)
    return str(value)


def json_schema() -> dict[str, Any]:
    """JSON Schema (2020-12) of `analyze --format json` and of a campaign cell's ncu_kernels.json."""
    types: dict[Kind, Any] = {"number": "number", "integer": "integer", "text": "string", "map": "object",
                              "list": "array"}
    props = {}
    for c in COLUMNS:
        t = types[c.kind]
        props[c.name] = {"type": [t, "null"] if c.nullable else t,
                         "description": c.doc + (f" [{c.unit}]" if c.unit else "")}
    kernel = {"type": "object", "required": [c.name for c in COLUMNS], "additionalProperties": False,
              "properties": props}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://kernelscope.dev/schema/kernel.schema.json",
        "title": "kernelscope kernels",
        "$defs": {"kernel": kernel},
        "oneOf": [
            {"title": "analyze --format json", "type": "object",
             "required": ["schema_version", "context", "units", "kernels", "frontier"],
             "properties": {"schema_version": {"const": SCHEMA_VERSION}, "context": {"type": "object"},
                            "units": {"type": "object"}, "frontier": {"type": "array"},
                            "kernels": {"type": "array", "items": {"$ref": "#/$defs/kernel"}}}},
            {"title": "campaign cell ncu_kernels.json", "type": "object",
             "required": ["schema_version", "campaign", "cell_id", "kernels"],
             "properties": {"schema_version": {"const": SCHEMA_VERSION}, "campaign": {"type": "string"},
                            "cell_id": {"type": "string"}, "captured_sources": {"type": "array"},
                            "kernels": {"type": "array", "items": {"$ref": "#/$defs/kernel"}}}},
        ],
    }


if __name__ == "__main__":
    print(json.dumps(json_schema(), indent=1))
