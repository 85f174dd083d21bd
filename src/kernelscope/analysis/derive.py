"""Counters -> figures, by the catalogue's sources (catalogue.FIGURES): each figure from the first
source the report holds, and the record says which when it is not the first. A figure no source
gives is None and its name goes into the record's `unmeasured` list: a missing counter is never
read as 0; nor is one out of range (model.in_range) or outside its domain (a clock of 0), which
is None with a note; one that does not apply (0/0) is None without being unmeasured."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import fields
from operator import itemgetter
from typing import Any, NamedTuple

from .. import catalogue as C
from ..model import OUT_OF_RANGE, KernelRecord, Part, RawKernel, TensorPath, all_in_range, in_range


def arch(m: Mapping[str, float]) -> C.Arch:
    """Whose counter names the report holds: the device's compute capability (10 and up is
    Blackwell), else any Blackwell-only counter present."""
    if C.COMPUTE_CAPABILITY in m:
        return "blackwell" if m[C.COMPUTE_CAPABILITY] >= 10 else "hopper"
    return "blackwell" if BLACKWELL_ONLY.intersection(m) else "hopper"


BLACKWELL_ONLY = frozenset(C.group("blackwell"))


class Figures(NamedTuple):
    """Every figure the report's counters give, how each was had, and the figures that do not apply."""

    values: dict[str, Any]
    sources: dict[str, str]  # figure -> its source's label, for the figures not from their first source
    not_applicable: frozenset[str]


class Plan(NamedTuple):
    """How one architecture's figures are had from one set of counters: worked out once a set (a
    report's launches share theirs), not a launch (~300 checks and ~60 figure steps a launch)."""

    copied: tuple[str, ...]  # figures whose first source held is the one counter itself, read in one C call
    counters: Callable[[Mapping[str, float]], tuple[float, ...]]  # those counters' values, in that order
    copied_from: dict[str, C.Source]  # their sources
    labels: dict[str, str]  # the labels of those not from their figure's first source
    # every other figure with its sources whose counters are held, each with its place among the figure's
    # sources (a label is kept for any but the first), and whether it also reads a figure above it, else
    # its counters' values in one C call
    rest: tuple[tuple[str, tuple[tuple[int, C.Source, bool, Callable[[Mapping[str, float]], Any]], ...]], ...]


# each figure's place in the catalogue: what a plan gives in two parts is put back in this order
RANK = {name: i for i, name in enumerate(C.FIGURE_NAMES)}


@functools.lru_cache(maxsize=64)
def _plan(names: C.Arch, held: tuple[str, ...]) -> Plan:
    """The plan for the counters `held` (a launch's counter names, as a hashable key)."""
    figures, have = frozenset(C.FIGURE_NAMES), frozenset(held)
    copied: dict[str, tuple[int, C.Source]] = {}
    rest = []
    for fig in C.FIGURES:
        ours = [(i, src, not figures.isdisjoint(src.needs), _getter(src.needs)) for i, src in enumerate(
            s for s in fig.sources if s.arch is None or s.arch == names) if have >= frozenset(src.needs) - figures]
        if ours and ours[0][1].formula is float and not ours[0][2]:  # `_one`: never None, nor NA
            copied[fig.name] = ours[0][0], ours[0][1]
        elif ours:
            rest.append((fig.name, tuple(ours)))
    return Plan(tuple(copied), _getter(tuple(src.needs[0] for _, src in copied.values())),
                {f: src for f, (_, src) in copied.items()}, {f: src.label for f, (i, src) in copied.items() if i},
                tuple(rest))


def _getter(names: tuple[str, ...]) -> Callable[[Mapping[str, float]], tuple[float, ...]]:
    """The values of `names` as a tuple, in one C call (itemgetter of one name gives no tuple)."""
    if len(names) > 1:
        return itemgetter(*names)
    return (lambda m: (m[names[0]],)) if names else (lambda m: ())


def evaluate(m: Mapping[str, float], names: C.Arch, used: dict[str, C.Source] | None = None) -> Figures:
    """Each figure from the first of its sources (for this architecture) whose counters and figures are
    all present and whose formula can tell (catalogue.FIGURES); derive nulls those out of range.
    `used`, when given, is told the source each figure came from (a multiplexed launch's attribution)."""
    plan = _plan(names, tuple(m))
    values: dict[str, Any] = dict(zip(plan.copied, map(float, plan.counters(m)), strict=True))
    sources = dict(plan.labels)
    na: set[str] = set()
    computed: dict[str, C.Source] = {}
    for name, ours in plan.rest:
        for i, src, by_figure, counters in ours:
            if by_figure:
                if not all(n in values or n in m for n in src.needs):
                    continue
                value = src.formula(*(values[n] if n in values else m[n] for n in src.needs))
            else:
                value = src.formula(*counters(m))
            if value is C.NA:
                na.add(name)
                break
            if value is not None:
                values[name] = value
                computed[name] = src
                if i:
                    sources[name] = src.label
                break
    if len(sources) > len(plan.labels) > 0:
        sources = _ranked(sources)
    if used is not None:
        used.update(_ranked({**plan.copied_from, **computed}))
    return Figures(values, sources, frozenset(na))


def _ranked(by_figure: dict[str, Any]) -> dict[str, Any]:
    return dict(sorted(by_figure.items(), key=lambda kv: RANK[kv[0]]))


@functools.cache
def classes(names: C.Arch) -> tuple[str, ...]:
    """The precision classes this architecture has (fp4 only on Blackwell); taken once, not three
    times a launch."""
    return tuple(c for c, by in C.TENSOR_FLOPS.items() if by[names]) + tuple(C.SIMT_FLOPS)


def flops_by_precision(figs: Figures, names: C.Arch) -> tuple[dict[str, float] | None, list[str], list[str]]:
    """FLOP per precision class for the classes measured, the classes that were not (a class the
    architecture lacks, like fp4 on Hopper, is neither), and notes. None when none was measured."""
    v = figs.values
    flops = {cls: v[f"flops.{cls}"] for cls in classes(names) if f"flops.{cls}" in v}
    missing = [cls for cls in classes(names) if f"flops.{cls}" not in v]
    notes = []
    hfma, real = v.get("simt.hfma"), v.get("hfma_math")
    if hfma is not None and real is not None and real < hfma:
        notes.append(f"{hfma - real:,.0f} HFMA2 thread-instructions ran on the tensor pipe as HFMA2.MMA register "
                     "moves: left out of fp16 FLOP")
    if "flops.fp16" in missing and hfma and "hfma_math" not in v:
        notes.append("fp16 HFMA2 not separable from HFMA2.MMA register moves (counter absent)")
    return (flops or None), missing, notes


# Under this share the tensor pipe ran no tensor math worth a FLOP total: HFMA2.MMA register moves of a
# norm or an elementwise kernel keep it at hundredths of a percent; a decode attention's MMA reads 1 %
TENSOR_PIPE_IDLE_PCT = 0.5


def tensor_unseen(m: Mapping[str, float], tensor_pipe_pct: float | None, missing: list[str] | tuple[str, ...],
                  names: C.Arch) -> str | None:
    """Why no tensor FLOP total can be given, when none of the architecture's tensor FLOP counters
    was collected and nothing says the tensor pipe sat idle: the tensor work the report does show
    (its pipe busy, wgmma or HMMA instructions counted), or that nothing shows either way. None when
    a tensor counter was collected or the pipe read 0 % (then the tensor classes are measured)."""
    tensor = [c for c in classes(names) if c.startswith("tensor_")]
    if not tensor or not set(tensor) <= set(missing):
        return None
    seen = []
    if tensor_pipe_pct is not None and tensor_pipe_pct >= TENSOR_PIPE_IDLE_PCT:
        seen.append(f"the tensor pipe {tensor_pipe_pct:.1f} % busy")
    if m.get(C.TENSOR_WGMMA_INST) or m.get(C.WGMMA_SASS_INST):
        seen.append(f"{m.get(C.TENSOR_WGMMA_INST) or m.get(C.WGMMA_SASS_INST):,.0f} wgmma instructions")
    elif (m.get(C.TENSOR_HMMA_INST) or 0) - (m.get(C.HFMA2_MMA) or 0) > 0:
        seen.append(f"{m[C.TENSOR_HMMA_INST] - (m.get(C.HFMA2_MMA) or 0):,.0f} HMMA instructions")
    counters = "sm__ops_path_tensor_src_*" if names == "hopper" else "sm__ops_path_tensor_src_*_dst_*"
    if not seen and tensor_pipe_pct is not None:  # the pipe all but idle: register moves (HFMA2.MMA), no math
        return None
    if seen:
        return f"tensor work not counted: {', '.join(seen)}, but its FLOP counters ({counters}) were not collected"
    return f"tensor FLOP not collected ({counters}) and nothing in the report says whether the tensor cores ran"


# Ratio figures: numerator / (denominator x scale), by their column names; a zero denominator makes
# the figure undefined, not unmeasured. Computed, declared and documented from this one table.
RATIOS: dict[str, tuple[str, str, float]] = {
    "arithmetic_intensity": ("flops.total", "dram_bytes", 1.0),
    "achieved_tflops": ("flops.total", "duration_ns", 1e3),  # FLOP/ns / 1e3 = TFLOP/s
    "achieved_dram_tbps": ("dram_bytes", "duration_ns", 1e3),  # B/ns / 1e3 = TB/s
}
FIELD_OF = {"flops.total": "flops_total"}  # a column whose record field is named otherwise
# The figures derive() makes from other figures, not from counters (catalogue.FIGURES holds those), as
# it computes them and by the names outputs give them (the record's flops_total is `flops.total`):
# docs/reference.md's table of sources lists them, and a test holds every figure a record measures
# to one of the two
FROM_FIGURES: dict[str, str] = {
    "flops.total": "sum of `flops.*`; null while a class was not collected and the others counted none, or while "
                   "the tensor cores may have run uncounted",
    "dominant_precision": "the `flops.*` class with the most FLOP",
    **{figure: f"{num} / {den}" if scale == 1 else f"{num} / ({den} x {scale:g})"
       for figure, (num, den, scale) in RATIOS.items()},
    "occupancy_limiter": "the lowest of `launch__occupancy_limit_*` (registers, shared_mem, warps, blocks)",
}


# Figures that a launch that ran cannot read as 0 or less: a roof is scaled by the clock it ran at.
POSITIVE = ("sm_clock_hz", "dram_clock_hz")
# Figures no launch can read below 0: a negative one is corruption, not a measurement
NON_NEGATIVE = ("duration_ns", "dram_bytes", "l2_bytes", "achieved_dram_tbps")

# The figures whose None means "not measured" (identity, lists and maps of detail are not figures), in
# field order: a record's `unmeasured` lists them in this order.
MEASURED = tuple(f.name for f in fields(KernelRecord) if f.name not in {
    "source", "launch_id", "name", "name_full", "device", "grid", "block", "flops_missing", "flops_at_most",
    "flops_total", "dominant_precision",
    "tensor_path", "ncu_rules", "code_file", "workload", "unmeasured", "notes", "sources", "metrics", "block_limits"})
# The record's figures that are catalogue figures of the same name, taken as they are.
PLAIN = tuple(f for f in MEASURED if f in C.FIGURE_NAMES)


def _ratio(num: float | None, den: float | None, scale: float) -> float | None:
    return None if num is None or den is None or den == 0 else num / (den * scale)


def _limiter(limits: Mapping[str, float]) -> str:
    low = min(limits.values())
    return "+".join(k for k, v in limits.items() if v == low)


def _check_range(figures: dict[str, Any], notes: list[str]) -> None:
    """Null the figures out of range (a ratio over a near-zero duration, a sum of huge counters: the
    input's values overflow) or outside their domain, each with a note; one C pass in the common case."""
    numbers = [v for v in figures.values() if type(v) is float]
    numbers += [v for m in figures.values() if type(m) is dict for v in m.values()]
    if all_in_range(numbers) and all(figures[f] is None or figures[f] > 0 for f in POSITIVE) \
            and all(figures[f] is None or figures[f] >= 0 for f in NON_NEGATIVE):
        return
    wrong = []
    for name, v in figures.items():
        if (type(v) is float and not in_range(v)) or (type(v) is dict and not all(map(in_range, v.values()))):
            figures[name] = None
            wrong.append(name)
    if wrong:
        notes.append(f"{OUT_OF_RANGE}: {', '.join(wrong)}")
    for name in POSITIVE:
        if figures[name] is not None and figures[name] <= 0:
            notes.append(f"{name} reads {figures[name]:g}: a launch that ran had a clock, so not measured")
            figures[name] = None
    for name in NON_NEGATIVE:
        if figures[name] is not None and figures[name] < 0:
            notes.append(f"{name} reads {figures[name]:g}: a time or a count is never negative, so not measured")
            figures[name] = None


def _launch_of(raw: RawKernel, figs: Figures, used: Mapping[str, C.Source]) -> tuple[list[str], dict[str, str]]:
    """A multiplexed launch's notes, and each figure's launch: the launches whose counters its source
    read (through the figures it reads); one read only from what every launch holds (launch
    attributes, the median duration) is from every launch."""
    owner = {c: p for p in raw.parts if p.refused is None for c in p.counters}

    def parts(fig: str) -> set[Part]:
        found: set[Part] = set()
        for n in used[fig].needs:
            found |= parts(n) if n in used else {owner[n]} if n in owner else set()
        return found

    sources = {}
    for fig, src in used.items():
        ps = sorted(parts(fig), key=lambda p: p.group)
        came = ", ".join(f"launch {p.launch_id} (group {p.group})" for p in ps) or "every launch"
        sources[fig] = came + (f": {src.label}" if fig in figs.sources else "")
    merged = [p for p in raw.parts if p.refused is None]
    times = [p.duration_ns for p in merged if p.duration_ns is not None]
    ids = {p.launch_id for p in merged}
    where = (f"launch {ids.pop()} of each group's run" if len(ids) == 1
             else ", ".join(f"group {p.group}: launch {p.launch_id}" for p in merged))
    replayed = [p for p in merged if p.passes is not None and p.passes > 1]
    how = "none replayed" if not replayed else (
        f"{len(replayed)} replayed (group " + ", ".join(f"{p.group}: {p.passes} passes" for p in replayed)
        + "; each holds a counter that takes more than one pass even alone)")
    launches = f"{len(merged)} launch{'es' if len(merged) != 1 else ''}"
    notes = [f"multiplexed: {launches} of this kernel, one counter group each ({where}), {how}"
             + (f"; duration_ns is their median ({min(times) / 1e3:,.2f}-{max(times) / 1e3:,.2f} µs)" if times else "")
             + "; `sources` names the launch each figure came from"]
    notes += [f"multiplexed: group {p.group}'s launch {p.launch_id} not merged: {p.refused}; its {len(p.counters)} "
              "counters left out, so the figures they feed are unmeasured" for p in raw.parts if p.refused]
    return notes, sources


def derive(raw: RawKernel) -> KernelRecord:
    m = raw.metrics
    names = arch(m)
    used: dict[str, C.Source] | None = {} if raw.parts else None
    figs = evaluate(m, names, used)
    v = figs.values
    get = v.get
    flops, missing, notes = flops_by_precision(figs, names)
    sources, said = figs.sources, list[str]()
    if used is not None:
        said, sources = _launch_of(raw, figs, used)
    notes = [*said, *raw.notes, *notes]
    if flops is not None and missing:
        notes.append("FLOP counters not collected for: " + ", ".join(missing) + " (their work is not counted)")
    # no work counted while a class is missing is not "no work": the work is unknown; nor is a total
    # without any tensor class while the tensor cores may have run (a GEMM's SIMT epilogue is not its work)
    unseen = tensor_unseen(m, get("tensor_pipe_active_pct"), missing, names)
    if unseen is not None and flops is not None:
        notes.append(f"{unseen}: no FLOP total, arithmetic intensity or compute %SoL")
    total = None if flops is None or unseen is not None or (missing and not any(flops.values())) \
        else sum(flops.values())
    dominant = max(flops, key=lambda k: flops[k]) if flops and total else None
    tensor = sum(x for k, x in (flops or {}).items() if k.startswith("tensor_"))
    path: TensorPath | None = get("tensor_path") if tensor > 0 else None
    if tensor > 0 and path is None:
        notes.append("tensor instruction path unknown (wgmma/HMMA instruction counters not collected)")
    limits = {k: m[n] for k, n in C.BLOCK_LIMITS.items() if n in m}
    not_applicable = set(figs.not_applicable)
    if "branch_divergence_pct" in not_applicable:
        notes.append("no branch instruction executed: branch divergence does not apply (0/0)")
    pipes = {p: v[f"pipe_busy.{p}"] for p in C.PIPES if f"pipe_busy.{p}" in v}
    if "tensor_pipe_active_pct" in v:
        pipes["tensor"] = v["tensor_pipe_active_pct"]
    figures: dict[str, Any] = {f: get(f) for f in PLAIN}
    figures.update(
        duration_ns=get("duration_ns"),
        flops=flops,
        flops_total=total,
        flops_missing=tuple(missing),
        flops_at_most={c: v[f"flops_at_most.{c}"] for c in missing if f"flops_at_most.{c}" in v} or None,
        dominant_precision=dominant,
        tensor_path=path,
        dram_bytes=get("dram_bytes"),
        l2_bytes=get("l2_bytes"),
    )
    figures.update({figure: _ratio(figures[FIELD_OF.get(num, num)], figures[den], scale)
                    for figure, (num, den, scale) in RATIOS.items()})
    figures.update(
        pipe_busy=pipes or None,
        occupancy_limiter=_limiter(limits) if len(limits) == len(C.BLOCK_LIMITS) else None,
        block_limits=limits if len(limits) == len(C.BLOCK_LIMITS) else None,
    )
    if raw.out_of_range:
        notes.append(f"counters {OUT_OF_RANGE}: {', '.join(raw.out_of_range)}")
    _check_range(figures, notes)
    for figure, (_, denominator, _) in RATIOS.items():
        if figures[denominator] == 0:
            notes.append(f"{figure} is undefined: {denominator} is 0 (x/0), so null without being unmeasured")
            not_applicable.add(figure)
    unmeasured = tuple(f for f in MEASURED if figures[f] is None and f not in not_applicable)
    if figures["flops"] is not None and figures["flops_total"] is None:
        unmeasured += ("flops_total",)
    return KernelRecord(source=raw.source, launch_id=raw.launch_id, name=raw.name, name_full=raw.name_full,
                        device=raw.device, grid=raw.grid, block=raw.block, **figures, ncu_rules=raw.rules,
                        code_file=raw.code_file, workload=raw.workload, unmeasured=unmeasured, notes=tuple(notes),
                        sources=sources,
                        metrics=m)
