"""The one column spec for a kernel: the JSON kernel object, CSV and Parquet columns, campaign
cells, the table and diff views, `diff --fail-on` gates and `kernel_internals` all take a figure's
name, kind, unit, doc, label and value from its one declaration here; a view only chooses which
figures it shows, by name (report/kernels.TABLE_FIGURES, report/diff.COMPARED, report/join.JOINED),
and a test fails when it names one not declared here. Where a figure comes from
(its sources as formulas over counters) is declared beside its name in catalogue.FIGURES, or, for a
figure made from other figures (a ratio, a total), in analysis/derive.FROM_FIGURES; a test holds
them together.

A published schema that fixes other names (inference_perfbench_v1's `kernel_internals`) is mapped
in one table at the bottom. The JSON schema in `schema/` is generated from this file
(`python3 -m kernelscope.columns > schema/kernel.schema.json`) and outputs are tested against it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import fields
from operator import attrgetter
from typing import Any, Literal, NamedTuple, get_args, get_origin, get_type_hints

from . import catalogue as C
from . import typed
from .analysis.categories import categorize
from .analysis.verdict import roof_pct, verdict_roof
from .model import OUT_OF_RANGE, Assessment, Capture, KernelRecord, Limiter, Provenance, all_in_range, in_range

SCHEMA_VERSION = 4  # 3: limiter, runner_up, evidence, provenance and ncu's verdict per kernel; 4: capture
Kind = Literal["number", "integer", "boolean", "text", "map", "list"]


class Shown(NamedTuple):
    """How the table and diff views show a figure: its label, its unit as read after `scale`
    (`µs` for ns x 1e-3), and its format."""

    label: str
    unit: str
    fmt: str
    scale: float = 1.0

    @property
    def heading(self) -> str:
        return f"{self.label} {self.unit}".strip()


class Column(NamedTuple):
    """One column of the kernel objects and flat CSV: its kind, unit, doc and how it is read."""

    name: str
    kind: Kind
    unit: str  # "" for text; every figure carries its unit here (a map of several units: see key_units)
    doc: str
    get: Callable[[Any], Any]  # of a KernelRecord (record columns) or an Assessment (the rest)
    nullable: bool = True
    keys: tuple[tuple[str, Kind], ...] = ()  # a map's every key and its kind: its flat columns, `name.key`
    shown: Shown | None = None  # None: no view shows it as a column of its own
    key_units: tuple[tuple[str, str], ...] = ()  # a map's keys whose unit is not the map's unit: (key, unit)
    key_shown: tuple[tuple[str, Shown], ...] = ()  # a map's keys the table shows as columns of their own

    def unit_of(self, key: str = "") -> str:
        """The unit of the column, or of one of a map's keys (what a `MAP.KEY` gate reads)."""
        return dict(self.key_units).get(key, self.unit) if key else self.unit


def _kind_of(hint: Any) -> Kind:
    """A field's type hint as a column kind: `float | None` is a number, a Literal is text."""
    if get_origin(hint) is Literal:
        return "text"
    types = set(get_args(hint) or (hint,)) - {type(None)}
    return "boolean" if bool in types else "number" if float in types else "integer" if int in types else "text"


def _keys_of(cls: type) -> tuple[tuple[str, Kind], ...]:
    """A dataclass's fields as a map column's keys, each of its field's kind."""
    hints = get_type_hints(cls)
    return tuple((f.name, _kind_of(hints[f.name])) for f in fields(cls))


def _numbers(*keys: str) -> tuple[tuple[str, Kind], ...]:
    return tuple((k, "number") for k in keys)


def _roof_key(a: Assessment) -> str | None:
    roof = verdict_roof(a)
    return None if roof is None or a.provisional else roof.key


def _r(attr: str) -> Callable[[KernelRecord], Any]:
    return attrgetter(attr)  # C speed: kernel_object reads ~70 of these a launch


def _a(attr: str) -> Callable[[Assessment], Any]:
    return attrgetter(attr)


def _flops(r: KernelRecord) -> dict[str, float | None] | None:
    return None if r.flops is None else {"total": r.flops_total, **r.flops}


def _map(attr: str) -> Callable[[KernelRecord], Any]:
    return lambda r: None if getattr(r, attr) is None else dict(getattr(r, attr))


def unmeasured_of(a: Assessment) -> list[str]:
    """The figures a launch lacks: its counters', and the %SoL that needed them (every format lists these)."""
    names = list(a.record.unmeasured)
    names += [n for n, v in (("pct_sol_compute", a.pct_sol_compute), ("pct_sol_memory", a.pct_sol_memory))
              if v is None and n not in names]
    return names


def _fields(flat: Any) -> dict[str, Any]:
    """A frozen dataclass of plain fields as a dict, in field order (its __init__ sets them in that
    order); dataclasses.asdict deep-copies and fields() reflects: both ~10x slower."""
    return dict(vars(flat))


def _num(name: str, unit: str, doc: str, get: Callable[[Any], Any] | None = None, shown: Shown | None = None
         ) -> Column:
    return Column(name, "number", unit, doc, get or _r(name), shown=shown)


def _units(*groups: tuple[str, tuple[str, ...]]) -> dict[str, Any]:
    """A map whose keys carry different units: its unit as written (`% of the roof (pct,
    pct_datasheet); Hz (clock_hz)`) and each key's unit, from one list."""
    return {"unit": "; ".join(f"{unit} ({', '.join(keys)})" for unit, keys in groups),
            "key_units": tuple((k, unit) for unit, keys in groups for k in keys)}


_ROOF_UNITS = _units(("% of the roof", ("pct", "pct_datasheet")), ("Hz", ("clock_hz",)))

RECORD: tuple[Column, ...] = (
    Column("source", "text", "", "the report the launch came from", _r("source"), nullable=False),
    Column("launch_id", "integer", "", "the launch's ID in its report (ncu's ID column)", _r("launch_id"),
           nullable=False),
    Column("name", "text", "", "kernel base name (function)", _r("name"), nullable=False),
    Column("name_full", "text", "", "demangled kernel name", _r("name_full"), nullable=False),
    Column("category", "text", "", "kernel category (analysis/categories.py)",
           lambda r: categorize(r.name, r.name_full)[0], nullable=False),
    Column("device", "text", "", "GPU name as ncu reports it", _r("device")),
    Column("workload", "text", "", "kernel, or graph: a whole CUDA graph (ncu --graph-profiling graph), its time and "
           "no kernel verdict", _r("workload"), nullable=False),
    Column("grid", "text", "", "grid dimensions (x, y, z)", _r("grid")),
    Column("block", "text", "", "block dimensions (x, y, z)", _r("block")),
    _num("duration_ns", "ns", "gpu__time_duration.sum of this launch", shown=Shown("time", "µs", ".1f", 1e-3)),
    Column("flops", "map", "FLOP per launch (int8: OP)", "work by precision class, with total; null when no "
           "FLOP counter was collected; total null when a class that may hold the work was not (no tensor counter "
           "while the tensor cores may have run)", _flops, keys=_numbers("total", *C.TENSOR_FLOPS, *C.SIMT_FLOPS)),
    Column("flops_missing", "list", "", "precision classes whose counters were not collected",
           lambda r: list(r.flops_missing), nullable=False),
    Column("flops_at_most", "map", "FLOP per launch", "for a missing class, the most FLOP it can hold where the "
           "report bounds it (fp16 HFMA2 not separable from register moves)", _map("flops_at_most"),
           keys=_numbers(*C.SIMT_FLOPS)),
    Column("dominant_precision", "text", "", "precision class holding most FLOP", _r("dominant_precision")),
    Column("tensor_path", "text", "", "tensor instruction path: wgmma, tcgen05 or mma.sync", _r("tensor_path")),
    _num("dram_bytes", "byte", "DRAM bytes read + written"),
    _num("l2_bytes", "byte", "L2 bytes (lts__t_bytes.sum)"),
    _num("arithmetic_intensity", "FLOP/byte", "FLOP per DRAM byte", shown=Shown("AI", "FLOP/B", ".1f")),
    _num("achieved_tflops", "TFLOP/s", "FLOP / duration", shown=Shown("", "TFLOP/s", ".1f")),
    _num("achieved_dram_tbps", "TB/s", "DRAM bytes / duration", shown=Shown("", "TB/s", ".2f")),
    _num("sm_clock_hz", "Hz", "SM clock the launch ran at (sm__cycles_elapsed.avg.per_second)"),
    _num("max_sm_clock_hz", "Hz", "the device's maximum SM clock (device__attribute_max_gpu_frequency_khz)"),
    _num("dram_clock_hz", "Hz", "DRAM clock the launch ran at"),
    _num("sm_busy_pct", "% of peak", "ncu Compute (SM) Throughput; not a FLOP rate",
         shown=Shown("SM busy", "%", ".0f")),
    _num("memory_busy_pct", "% of peak", "ncu Memory Throughput"),
    _num("sm_active_pct", "% of elapsed cycles", "SM cycles with work"),
    _num("issue_active_pct", "% of peak while SM active", "ncu Issue Slots Busy"),
    _num("dram_throughput_pct", "% of peak", "ncu DRAM Throughput"),
    _num("l2_throughput_pct", "% of peak", "ncu L2 Cache Throughput (lts__throughput): the busiest L2 sub-unit"),
    _num("l2_sectors_pct", "% of peak", "L2 bandwidth: the busier of the L2 tag and data stages' sectors "
         "(lts__t_sectors, lts__d_sectors), over elapsed cycles"),
    _num("tensor_pipe_active_pct", "% of peak while SM active", "tensor pipe active cycles"),
    Column("pipe_busy", "map", "% of peak while SM active", "busy share per SM pipe (fma, alu, fp64, xu, lsu, "
           "tensor)", _map("pipe_busy"), keys=_numbers(*C.PIPES, "tensor")),
    _num("achieved_occupancy_pct", "% of max warps", "achieved occupancy", shown=Shown("occ", "%", ".0f")),
    _num("theoretical_occupancy_pct", "% of max warps", "theoretical occupancy"),
    _num("achieved_active_warps_per_sm", "warp", "achieved active warps per SM"),
    _num("registers_per_thread", "register", "registers per thread", shown=Shown("regs", "", ".0f")),
    _num("shared_mem_per_block_bytes", "byte", "shared memory per block: static + dynamic + driver-reserved"),
    _num("shared_mem_static_bytes", "byte", "static shared memory per block"),
    _num("shared_mem_dynamic_bytes", "byte", "dynamic shared memory per block"),
    _num("shared_mem_driver_bytes", "byte", "shared memory the driver reserves per block"),
    Column("occupancy_limiter", "text", "", "what limits blocks per SM (registers, shared_mem, warps, blocks)",
           _r("occupancy_limiter")),
    Column("block_limits", "map", "blocks per SM", "blocks per SM each resource allows", _map("block_limits"),
           keys=_numbers(*C.BLOCK_LIMITS)),
    _num("waves_per_sm", "waves", "launch waves per SM"),
    _num("branch_divergence_pct", "% of branch targets", "branch targets not uniform across the warp"),
    _num("simt_efficiency_pct", "% of 32 threads", "active threads per executed instruction"),
    Column("warp_stalls", "map", "% of stalled warp-cycles", "stall reasons, sums to 100", _map("warp_stalls"),
           keys=_numbers(*C.STALLS)),
    _num("register_spill_pct", "% of instructions", "instructions that spill or fill registers to local memory "
         "(sass__inst_executed_register_spilling over smsp__inst_executed.sum; --set full, detailed)"),
    _num("nvlink_bytes_per_s", "byte/s", "NVLink bytes received + sent per second, all the GPU's links together "
         "(nvlrx + nvltx__bytes.sum.per_second: the nvlink add-on, --set detailed or full); null and not in "
         "unmeasured: no NVLink on this device (nvlink__count_logical 0)"),
    _num("nvlink_busier_way_bytes_per_s", "byte/s", "the larger of NVLink bytes received and sent per second: the "
         "figure each direction's bandwidth bounds, so a collective that only sends can reach its roof; null as "
         "nvlink_bytes_per_s"),
    Column("code_file", "text", "", "the kernel's source file, from the report's line information (a .py file: a "
           "Triton kernel); null without line information", _r("code_file")),
    Column("ncu_rules", "list", "", "ncu's own rule results stored in the report",
           lambda r: [_fields(x) for x in r.ncu_rules], nullable=False),
    Column("notes", "list", "", "how figures were derived where it matters", lambda r: list(r.notes),
           nullable=False),
    Column("sources", "map", "", "figures read from another source than their first in the catalogue "
           "(catalogue.FIGURES), and how: a figure not listed came from its first source; for a multiplexed launch, "
           "every figure, with the launch it came from", _map("sources"),
           keys=tuple((f, "text") for f in C.FIGURE_NAMES)),
)
PLACED: tuple[Column, ...] = (
    Column("hw_key", "text", "", "ceilings entry used", _a("hw_key"), nullable=False),
    Column("compute_ceiling_key", "text", "", "the compute ceiling the kernel is held to", _a("compute_ceiling_key")),
    _num("compute_ceiling_tflops", "TFLOP/s", "value at compute_ceiling_key", _a("compute_ceiling_tflops")),
    Column("memory_ceiling_key", "text", "", "the memory ceiling", _a("memory_ceiling_key"), nullable=False),
    _num("memory_ceiling_tbps", "TB/s", "value at memory_ceiling_key", _a("memory_ceiling_tbps")),
    _num("ridge_flops_per_byte", "FLOP/byte", "ridge point of the binding roofs", _a("ridge_flops_per_byte")),
    _num("pct_sol_compute", "% of SoL", "compute speed of light against the datasheet figure (limiter.pct holds "
         "the limiting roof at the measured clock)", _a("pct_sol_compute"), Shown("SoL comp", "%", ".0f")),
    _num("pct_sol_memory", "% of SoL", "memory speed of light against the datasheet figure", _a("pct_sol_memory"),
         Shown("SoL mem", "%", ".0f")),
    _num("pct_sol", "% of the roof", "the verdict's roof %: the limiter's (the nearest roof's for latency) at the "
         "measured clock, as the table's roof %; null when provisional or unmeasured", roof_pct,
         Shown("roof", "%", ".0f")),
    Column("ceiling_key", "text", "", "the roof pct_sol is against: a ceiling key (with @path for a tensor roof) or "
           "the counter of a pipe, the issue slots or L2", _roof_key),
    Column("bound", "text", "", "compute | memory | latency | unmeasured", _a("bound"), nullable=False),
    Column("provisional", "boolean", "", "the bound is provisional: no FLOP or DRAM byte counters to place the kernel "
           "on the roofline, so it names the busiest unit (ncu's per-unit throughputs) and no %SoL",
           _a("provisional"), nullable=False),
    Column("verdict", "text", "", "the verdict in one line", _a("verdict"), nullable=False),
    Column("limiter", "map", doc="what decided the bound: kind (tensor, simt, hbm, l2, pipe, issue, nvlink, "
           "latency, launch, grid, unmeasured), key, name, pct at the measured clock, pct_datasheet, clock_hz, "
           "reading", get=lambda a: _fields(a.limiter), nullable=False, keys=_keys_of(Limiter), **_ROOF_UNITS),
    Column("runner_up", "map", doc="the next roof (the nearest one when latency is named), as limiter",
           get=lambda a: None if a.runner_up is None else _fields(a.runner_up), keys=_keys_of(Limiter),
           **_ROOF_UNITS),
    Column("evidence", "list", "", "the figures that decided, with units", lambda a: list(a.evidence),
           nullable=False),
    Column("provenance", "map", "", "who owns the code (library, open, user), its family, warp_specialised, "
           "and what matched", lambda a: _fields(a.provenance), nullable=False, keys=_keys_of(Provenance)),
    Column("ncu_bottleneck", "text", "", "ncu's own SOLBottleneck title from the report", lambda a: a.ncu.bottleneck),
    Column("ncu_agrees", "boolean", "", "whether ncu's SOLBottleneck agrees with bound; null: nothing to compare",
           lambda a: a.ncu.agrees),
    Column("ncu_why", "text", "", "ncu's figures and title beside ours, and why they differ when they do",
           lambda a: a.ncu.why, nullable=False),
    Column("ncu_fired", "list", "", "ncu's launch, occupancy, pipe and issue rules that fired",
           lambda a: list(a.ncu.rules), nullable=False),
    Column("limiters", "list", "", "what else limits it, with the figures", lambda a: list(a.limiters),
           nullable=False),
    Column("next_levers", "list", "", "ranked levers the owner can pull: rule, family, action, expected, confirm, "
           "gain, cost, unlock_x (upper-bound speed-up, x)", lambda a: [_fields(lv) for lv in a.next_levers],
           nullable=False),
    Column("analytic", "map", doc="a harness op's analytic work and counted/analytic ratios",
           get=lambda a: None if a.analytic is None else dict(a.analytic),
           keys=(("describe", "text"), *_numbers("flops", "counted_over_analytic_flops", "bytes",
                                                 "counted_over_analytic_bytes")),
           **_units(("FLOP", ("flops",)), ("byte", ("bytes",)),
                    ("ratio", ("counted_over_analytic_flops", "counted_over_analytic_bytes")))),
    Column("pct_of_achievable", "map", doc="%SoL against measured (achievable) ceilings",
           get=lambda a: None if a.achievable is None else dict(a.achievable),
           **_units(("% of the achievable ceiling", ("pct_compute", "pct_memory"))),
           key_shown=(("pct_compute", Shown("ach comp", "%", ".0f")), ("pct_memory", Shown("ach mem", "%", ".0f"))),
           keys=(("ceilings_file", "text"), ("compute_ceiling_key", "text"), ("pct_compute", "number"),
                 ("memory_ceiling_key", "text"), ("pct_memory", "number"))),
    Column("capture", "map", "", "the capture the launch came from, as its bundle's manifest or its report records "
           "it: ncu_version, metric_set, clock_control (null: not given, ncu's default, or no command line "
           "recorded), graph_profiling, multiplexed (capture --multiplex: its figures from several launches, one "
           "counter group each, none replayed); null when its input records none (a CSV export)",
           lambda a: None if a.capture is None else _fields(a.capture),
           keys=_keys_of(Capture)),
    Column("unmeasured", "list", "", "figures whose counters were not collected", unmeasured_of, nullable=False),
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


_RECORD_GETS = tuple((c.name, c.get) for c in RECORD)
_PLACED_GETS = tuple((c.name, c.get) for c in PLACED)


def kernel_object(a: Assessment) -> dict[str, Any]:
    """The JSON kernel object: every column, nulls where unmeasured."""
    rec = a.record
    obj = {name: get(rec) for name, get in _RECORD_GETS}
    obj.update({name: get(a) for name, get in _PLACED_GETS})
    return _in_range(obj)


def value(a: Assessment, name: str) -> Any:
    """One column of one launch: what kernel_object(a)[name] holds, without building the rest."""
    return BY_NAME[name].get(a.record if name in _OF_RECORD else a)


def record_object(rec: KernelRecord) -> dict[str, Any]:
    """A KernelRecord alone (no ceilings): its own columns, with what was not measured."""
    return _in_range({**{c.name: c.get(rec) for c in RECORD}, "unmeasured": list(rec.unmeasured)})


def _in_range(obj: dict[str, Any]) -> dict[str, Any]:
    """Every number written is in range (model.in_range), so what is written reads back: a figure
    out of it (a %SoL against a hostile ceiling; never NaN or Infinity, which JSON lacks) becomes
    null, and a note says which and why. derive.py has nulled the record's own figures already."""
    values = obj.values()
    floats = [v for v in values if type(v) is float]
    floats += [v for m in values if type(m) is dict for v in m.values() if type(v) is float]
    if all_in_range(floats):  # the common case in C loops; else one by one
        return obj
    bad = []
    for name, value in obj.items():
        if isinstance(value, float) and not in_range(value):
            obj[name] = None
            bad.append(name)
        elif isinstance(value, dict) and any(isinstance(v, float) and not in_range(v) for v in value.values()):
            obj[name] = {k: None if isinstance(v, float) and not in_range(v) else v for k, v in value.items()}
            bad.append(name)
    if bad:
        obj["notes"] = [*obj["notes"], f"{OUT_OF_RANGE}, shown as null: {', '.join(bad)}"]
    return obj


INT64 = typed.INT64


_KINDS: dict[Kind, Callable[[Any], bool]] = {
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and in_range(v),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool) and v in INT64,
    "boolean": lambda v: isinstance(v, bool),
    "text": lambda v: isinstance(v, str), "map": lambda v: isinstance(v, dict), "list": lambda v: isinstance(v, list),
}


_SHOWN = {"number": "a number (0, or 1e-30 to 1e30 in magnitude)", "integer": "an int64 integer"}
_CHECKS = tuple((c.name, c.nullable, _KINDS[c.kind], frozenset(k for k, _ in c.keys)) for c in COLUMNS)
_RECORD_FIELDS = tuple(f.name for f in fields(KernelRecord))
_ASSESSMENT_FIELDS = tuple(f.name for f in fields(Assessment))
_PLACED_NAMES = frozenset(c.name for c in PLACED)


def assessment(obj: Mapping[str, Any], where: str = "kernel") -> Assessment:
    """The inverse of kernel_object: an Assessment from a stored kernel object (a campaign cell), every
    field type-checked, so reports can be drawn from cells without re-reading the sources. The raw
    counters are not stored, so `record.metrics` is empty."""
    if not isinstance(obj, Mapping):
        raise typed.TypeProblem(f"{where}: expected a map, got {type(obj).__name__}")
    for name, nullable, is_kind, keys in _CHECKS:  # the derived columns (category, pct_sol, ...) too: gates read them
        value = obj.get(name)
        if not (value is None and nullable) and not is_kind(value):
            c = BY_NAME[name]
            raise typed.TypeProblem(f"{where}.{name}: expected {_SHOWN.get(c.kind, c.kind)}"
                                    f"{' or null' if nullable else ''}, got {value!r:.80}")
        if keys and isinstance(value, Mapping) and not keys.issuperset(value):  # the flat columns would drop it
            extra = sorted(map(str, set(value) - keys))
            raise typed.TypeProblem(f"{where}.{name}: {', '.join(extra)!r:.80} not among its keys in this version's "
                                    f"column spec ({', '.join(sorted(keys))})")
    rec = {name: obj[name] for name in _RECORD_FIELDS if name in obj}
    flops = obj.get("flops")
    rec["flops"] = {k: v for k, v in flops.items() if k != "total"} if isinstance(flops, Mapping) else flops
    rec["flops_total"] = flops.get("total") if isinstance(flops, Mapping) else None
    unmeasured = obj.get("unmeasured")
    rec["unmeasured"] = [n for n in unmeasured if not (isinstance(n, str) and n in _PLACED_NAMES)] \
        if isinstance(unmeasured, list) else unmeasured
    rec["metrics"] = {}
    doc = {name: obj[name] for name in _ASSESSMENT_FIELDS if name in obj}
    doc["record"] = rec
    doc["ncu"] = {"bottleneck": obj.get("ncu_bottleneck"), "rules": obj.get("ncu_fired"),
                  "agrees": obj.get("ncu_agrees"), "why": obj.get("ncu_why")}
    if "pct_of_achievable" in obj:
        doc["achievable"] = obj["pct_of_achievable"]
    return typed.build(Assessment, doc, where)


def _flat_names(c: Column) -> tuple[str, ...]:
    return tuple(f"{c.name}.{key}" for key, _ in c.keys) if c.kind == "map" else (c.name,)


# The flat columns (CSV, Parquet, DataFrame), fixed by this spec: a map's every key whether or not a
# launch has it (a Blackwell FLOP class on a Hopper run is an empty field, never 0), so every file
# of every run and version has the same header and they concatenate and union by name.
FLAT: tuple[str, ...] = tuple(n for c in COLUMNS for n in _flat_names(c))
FLAT_KINDS: dict[str, Kind] = {
    **{c.name: c.kind for c in COLUMNS if c.kind != "map"},
    **{f"{c.name}.{key}": kind for c in COLUMNS for key, kind in c.keys},
}


def _plan() -> tuple[tuple[Kind | None, str, tuple[str, ...]], ...]:
    """How FLAT is read from a kernel object: (None, "", names) a run of plain columns read together,
    ("map", name, keys) a map's keys, ("list", name, ()) a list joined."""
    plan: list[tuple[Kind | None, str, tuple[str, ...]]] = []
    for c in COLUMNS:
        if c.kind in ("map", "list"):
            plan.append((c.kind, c.name, tuple(k for k, _ in c.keys)))
        elif plan and plan[-1][0] is None:
            plan[-1] = (None, "", (*plan[-1][2], c.name))
        else:
            plan.append((None, "", (c.name,)))
    return tuple(plan)


_PLAN = _plan()


def flat_values(obj: Mapping[str, Any]) -> list[Any]:
    """A kernel object's values in FLAT's columns: a map's `name.key` columns (None where it lacks
    the key, or is null, or the object lacks the column), a list ' | '-joined text (levers and rule
    results by their first field). A few dozen steps of C loops: the CSV writer's row."""
    out: list[Any] = []
    get = obj.get
    for kind, name, keys in _PLAN:
        if kind is None:
            out.extend(map(get, keys))
            continue
        value = get(name)
        if kind == "map":
            out.extend(map(value.get, keys) if isinstance(value, dict) else [None] * len(keys))
        else:
            out.append(_joined(value) if isinstance(value, list) else value)
    return out


def flatten(obj: Mapping[str, Any]) -> dict[str, Any]:
    """One flat row (Parquet, a DataFrame): FLAT's columns and flat_values."""
    return dict(zip(FLAT, flat_values(obj), strict=True))


def _joined(items: list[Any]) -> str:
    try:
        return " | ".join(items)
    except TypeError:  # levers and rule results (maps), or numbers
        return " | ".join(map(_text, items))


def _text(value: Any) -> str:
    if isinstance(value, Mapping):
        first = next(iter(value.values()), "")
        return str(value.get("action") or value.get("title") or first)
    return str(value)


def json_schema() -> dict[str, Any]:
    """JSON Schema (2020-12) of `analyze --format json` and of a campaign cell's ncu_kernels.json."""
    types: dict[Kind, Any] = {"number": "number", "integer": "integer", "boolean": "boolean", "text": "string",
                              "map": "object", "list": "array"}
    props = {}
    for c in COLUMNS:
        t = types[c.kind]
        props[c.name] = {"type": [t, "null"] if c.nullable else t,
                         "description": c.doc + (f" [{c.unit}]" if c.unit else "")}
        if c.keys:  # a map holds only the keys its flat columns name
            props[c.name] |= {"properties": {k: {"type": [types[kind], "null"]} for k, kind in c.keys},
                              "additionalProperties": False}
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
