"""Compare a baseline and a candidate kernel by kernel, as a gate. Kernels are paired by `join`'s
matching rules (report/join.py `pair`): by full name (the n-th kernel of a name with the n-th),
else by base name when a template's arguments changed and that base name is one kernel's on each
side (the output says which pairs were matched so). Each side's launches of a kernel together:
time is the mean per launch, the other figures the representative launch's (the launch whose
verdict stands for the kernel, analysis/groups.py).

Two captures of one program on one device compare whatever counters each collected: the figures
both measured are compared and those one side lacks are listed (`left_out`). A different device,
shapes or model makes the comparison meaningless, and is refused unless asked for (`mismatches`).
A time gate also applies to the summed kernel time of each side, which sees what a pairing by name
cannot: a kernel added, or one swapped for a differently named one (a library picking another tile
configuration) that is slower. A gate that cannot be evaluated (a side did not measure its figure)
is said so and does not pass."""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..analysis.groups import KernelGroup, display_names
from ..analysis.verdict import verdict_roof
from ..ceilings import CeilingsFile
from ..columns import BY_NAME, value
from ..manifest import Recorded
from ..model import Assessment
from . import kernels
from .csv_fields import CsvWriter
from .gates import UNITS, Change, Gate, figure_value, is_percent
from .join import pair
from .style import BOUND_ANSI
from .table import NAME, Col, Table

# what must agree: a difference is refused (the compute capability stands in for a device one side does not name)
CONTEXT_FIELDS = ("device", "compute_capability", "shapes", "model")
MOVED_PCT = 1.0  # a figure moved when it changed by at least this share of its baseline
# the figures compared, time first: each as its declaration shows it (columns.py)
COMPARED = ("duration_ns", "pct_sol", "achieved_tflops", "achieved_dram_tbps", "arithmetic_intensity",
            "achieved_occupancy_pct", "sm_busy_pct", "registers_per_thread")
SIDES = ("baseline", "candidate")


def bundle_context(m: Recorded | None, items: Sequence[Assessment], table: CeilingsFile) -> dict[str, Any]:
    """What must agree between the two sides, for a bundle or a bare report alike (its own record of
    its capture; a CSV export has none: its device is its launches'), and the metric set, which need
    not. The compute capability is that of the device the launches were held to (CeilingsFile.cc_of:
    a details export that names no device still records its CC)."""
    ccs = {table.cc_of(k) for k in {a.hw_key for a in items}}
    ctx: dict[str, Any] = {
        "device": (m.gpu.name if m else None) or next((a.record.device for a in items if a.record.device), None),
        "compute_capability": ccs.pop() if len(ccs) == 1 else None,
        "metric_set": "unknown", "shapes": "unknown", "model": "unknown",
    }
    if m is not None:
        ctx.update(metric_set=m.metric_sets, shapes=m.shapes or "unknown", model=m.context.get("model") or "unknown")
    return ctx


def _known(value: Any) -> bool:
    return value not in (None, "unknown")


def mismatches(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """The context both sides record, and differently: a diff of them is refused unless asked for."""
    return [f"{k}: {a[k]!r} vs {b[k]!r}" for k in CONTEXT_FIELDS if _known(a[k]) and _known(b[k]) and a[k] != b[k]]


def unchecked(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """The context one side records and the other does not (a details export names no device): not
    a difference, but not checked either, so it is said beside the comparison."""
    return [f"{k}: {a[k] if _known(a[k]) else 'not recorded'!r} vs {b[k] if _known(b[k]) else 'not recorded'!r} "
            "(not checked)" for k in CONTEXT_FIELDS if _known(a[k]) != _known(b[k])]


def figure(g: KernelGroup | None, name: str) -> float | None:
    if g is None:
        return None
    return g.mean_ns if name == "duration_ns" else figure_value(g.representative, name)


def _unmeasured(g: KernelGroup) -> set[str]:
    return set(value(g.representative, "unmeasured"))


@dataclass(frozen=True)
class KernelDiff:
    rank: int
    name: str  # the baseline's kernel as shown (the candidate's where only it has it)
    cand_name: str | None  # the candidate's, where it has it
    matched: str | None  # the rule that paired it ("name", "base name"); None on one side only
    base: KernelGroup | None
    cand: KernelGroup | None
    changes: Mapping[str, Change]
    failed: tuple[str, ...]  # the gates this kernel failed
    unevaluated: tuple[tuple[str, str], ...]  # (gate, why) for each gate that could not be evaluated
    basis: tuple[str, ...] = ()  # how a clock-dependent figure was put on one footing for both sides

    def moved(self, name: str) -> bool:
        pct = self.changes[name].pct
        return pct is not None and abs(pct) >= MOVED_PCT

    @property
    def status(self) -> str:
        if self.cand is None:
            return "only in baseline"
        if self.base is None:
            return "only in candidate"
        if self.failed:
            return "FAIL"
        if self.unevaluated:
            return "NOT EVALUATED"
        moved = any(self.moved(n) for n in self.changes)
        bounds = {kernels.bound_cell(side.representative) for side in (self.base, self.cand)}
        return "moved" if moved or len(bounds) > 1 else "same"


@dataclass(frozen=True)
class Comparison:
    kernels: tuple[KernelDiff, ...]
    gates: tuple[Gate, ...]
    mismatches: tuple[str, ...]  # context that differs, compared anyway (--allow-mismatch)
    metric_sets: tuple[str, str]
    left_out: tuple[tuple[str, ...], tuple[str, ...]]  # figures the baseline, the candidate did not measure
    total: Change  # summed kernel time (ns) of each side, see `summed`
    total_basis: str  # what was summed
    total_failed: tuple[str, ...]  # the time gates the summed kernel time crossed
    total_unevaluated: tuple[str, ...]  # time gates it could not be held to (a duration unmeasured)

    @property
    def failed(self) -> list[KernelDiff]:
        return [k for k in self.kernels if k.failed]

    @property
    def unevaluated(self) -> list[KernelDiff]:
        return [k for k in self.kernels if k.unevaluated]

    @property
    def passed(self) -> bool:
        return not (self.failed or self.unevaluated or self.total_failed or self.total_unevaluated)


def summed(pairs: Sequence[tuple[KernelGroup | None, KernelGroup | None]]) -> tuple[Change, str]:
    """Each side's kernel time, summed: over every launch when each kernel was captured as often on
    both sides, else one launch of each kernel (launch counts then say how the captures were
    limited, not what the program does). None where a side has an unmeasured duration."""
    alike = all(b is None or c is None or len(b.launches) == len(c.launches) for b, c in pairs)

    def side(groups: list[KernelGroup]) -> float | None:
        times = [g.total_ns if alike else g.mean_ns for g in groups]
        return None if any(t is None for t in times) else sum(t for t in times if t is not None)

    basis = "all launches" if alike else "one launch of each kernel: launch counts differ"
    return (Change(side([b for b, _ in pairs if b is not None]), side([c for _, c in pairs if c is not None])),
            basis)


def _why(c: Change) -> str:
    lacking = [side for side, v in zip(SIDES, (c.base, c.cand), strict=True) if v is None]
    return "unmeasured on both sides" if len(lacking) == 2 else f"unmeasured in the {lacking[0]}"


def _verdicts(gates: Sequence[Gate], changes: Mapping[str, Change], footing: Sequence[str] = ()
              ) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """(the gates crossed, (gate, why) for each not evaluated)."""
    out = [(g, g.fails(changes[g.figure])) for g in gates]
    apart = next((f for f in footing if f.startswith("pct_sol not compared")), None)
    return (tuple(g.text for g, v in out if v),
            tuple((g.text, apart if apart and g.figure == "pct_sol" else _why(changes[g.figure]))
                  for g, v in out if v is None))


def on_one_clock(b: KernelGroup, c: KernelGroup, changes: dict[str, Change]) -> tuple[str, ...]:
    """`pct_sol` is a roof read at the clock a kernel ran at, or at the datasheet's where its clock was
    not collected: two sides on different footing are compared at the datasheet clock (both hold that
    figure), or said not to be comparable, never compared as they are."""
    if "pct_sol" not in changes:
        return ()
    rb, rc = verdict_roof(b.representative), verdict_roof(c.representative)
    if rb is None or rc is None or (rb.clock_hz is None) == (rc.clock_hz is None):
        return ()
    measured = SIDES[0] if rb.clock_hz is not None else SIDES[1]
    said = f"the {measured}'s roof is held at its measured clock, the other's at the datasheet clock (its clock " \
           "not collected)"
    if rb.key == rc.key and rb.pct_datasheet is not None and rc.pct_datasheet is not None:
        changes["pct_sol"] = Change(rb.pct_datasheet, rc.pct_datasheet)
        return (f"pct_sol compared at the datasheet clock: {said}",)
    changes["pct_sol"] = Change(None, None)
    return (f"pct_sol not compared: {said}, and no datasheet-clock figure stands for both",)


def compare(base: Sequence[Assessment], cand: Sequence[Assessment], gates: Sequence[Gate] = (),
            context_mismatches: Sequence[str] = (), metric_sets: tuple[str, str] = ("unknown", "unknown")
            ) -> Comparison:
    names = list(dict.fromkeys([*COMPARED, *(g.figure for g in gates)]))
    left = [r.group for r in kernels.ranked(base)]
    right = [r.group for r in kernels.ranked(cand)]
    found = pair([g.name_full for g in left], [g.name_full for g in right])
    pairs = [(None if i is None else left[i], None if j is None else right[j], how) for i, j, how in found]
    seen = {g.name_full: g.name for g in [*left, *right]}
    label = dict(zip(seen, display_names((n, f) for f, n in seen.items()), strict=True))
    lacks: tuple[set[str], set[str]] = (set(), set())
    out = []
    for rank, (b, c, how) in enumerate(pairs, 1):
        changes = {n: Change(figure(b, n), figure(c, n)) for n in names}
        footing = on_one_clock(b, c, changes) if b and c else ()
        failed, unevaluated = _verdicts(gates, changes, footing) if b and c else ((), ())
        if b and c:
            ub, uc = _unmeasured(b), _unmeasured(c)
            lacks[0].update(ub - uc)
            lacks[1].update(uc - ub)
        either = b if b is not None else c
        assert either is not None
        out.append(KernelDiff(rank, label[either.name_full], None if c is None else label[c.name_full], how, b, c,
                              changes, failed, unevaluated, footing))
    total, basis = summed([(b, c) for b, c, _ in pairs])
    timed = [(g, g.fails(total)) for g in gates if g.figure == "duration_ns"]
    return Comparison(tuple(out), tuple(gates), tuple(context_mismatches), metric_sets,
                      (tuple(sorted(lacks[0])), tuple(sorted(lacks[1]))), total, basis,
                      tuple(g.text for g, v in timed if v), tuple(g.text for g, v in timed if v is None))


def _spec(name: str) -> tuple[str, float, str]:
    """A compared figure's heading, scale and format: as declared, else (a gated figure no view
    shows) its name and unit."""
    how = None if "." in name else BY_NAME[name].shown  # a map's key (`warp_stalls.barrier`) has no view
    if how is not None:
        return how.heading, how.scale, how.fmt
    return f"{name} {'%' if is_percent(name) else UNITS[name].split(' (')[0]}".strip(), 1.0, ".4g"


def _ways(name: str, gates: Sequence[Gate]) -> tuple[str, ...]:
    """How a figure's change is shown: in points for a percent figure, relative for the rest, and
    besides, the way each gate on it reads it (`%`, `pt`, or `abs`: in the column spec's unit)."""
    used = ["%" if g.relative else "pt" if is_percent(name) else "abs" for g in gates if g.figure == name]
    return tuple(dict.fromkeys(["pt" if is_percent(name) else "%", *used]))


def _moved(c: Change, way: str, unit: str) -> str | None:
    d, pct = c.delta, c.pct
    if d is None or pct is None:
        return None
    if way == "pt":
        return f"{d:+.1f}pt"
    if way == "abs":
        return f"{d:+,.6g} {unit}".strip()
    return f"{'+' if pct > 0 else '-'}∞%" if math.isinf(pct) else f"{pct:+.1f}%"


def change_text(name: str, scale: float, spec: str, gates: Sequence[Gate]) -> Any:
    """A cell: `baseline → candidate (change)`, the change as `_ways` says."""
    ways = _ways(name, gates)

    def fmt(c: Change) -> str:
        b = "—" if c.base is None else format(c.base * scale, spec)
        a = "—" if c.cand is None else format(c.cand * scale, spec)
        moved = [m for m in (_moved(c, w, UNITS[name]) for w in ways) if m is not None]
        return f"{b} → {a}" + (f" ({', '.join(moved)})" if moved else "")
    return fmt


def _bound(k: KernelDiff) -> str:
    b = kernels.bound_cell(k.base.representative) if k.base else "—"
    c = kernels.bound_cell(k.cand.representative) if k.cand else "—"
    return b if b == c else f"{b} → {c}"


def coverage(cmp: Comparison) -> str | None:
    """What was compared, where the two captures did not measure the same figures."""
    a, b = cmp.metric_sets
    sets = "" if a == b else f" (metric sets {a!r} vs {b!r})"
    lacks = [f"the {side} lacks {', '.join(names)}" for side, names in zip(SIDES, cmp.left_out, strict=True) if names]
    if not sets and not lacks:
        return None
    return (f"compared on the figures both sides measured{sets}; "
            + (f"left out: {'; '.join(lacks)}" if lacks else "both measured every compared figure"))


def summary(cmp: Comparison) -> str:
    counts: dict[str, int] = {}
    for k in cmp.kernels:
        counts[k.status] = counts.get(k.status, 0) + 1
    parts = [f"{n} {s}" for s, n in counts.items()]
    time = change_text("duration_ns", 1e-3, ".1f", cmp.gates)(cmp.total)
    parts.append(f"summed kernel time µs ({cmp.total_basis}) {time}")
    if not cmp.gates:
        return "; ".join(parts) + "; no --fail-on gate"
    failed, unevaluated = cmp.failed, cmp.unevaluated
    crossed = ([f"{len(failed)} kernel(s) crossed " + ", ".join(sorted({t for k in failed for t in k.failed}))]
               if failed else [])
    crossed += [f"summed kernel time crossed {', '.join(cmp.total_failed)}"] if cmp.total_failed else []
    unknown = ([f"{len(unevaluated)} kernel(s) not evaluated on "
                + ", ".join(sorted({t for k in unevaluated for t, _ in k.unevaluated}))]
               if unevaluated else [])
    unknown += [f"summed kernel time not evaluated on {', '.join(cmp.total_unevaluated)} (a duration unmeasured)"
                ] if cmp.total_unevaluated else []
    if crossed:
        verdict = "gate FAILED: " + "; ".join(crossed + unknown)
    elif unknown:
        verdict = "gate NOT EVALUATED: " + "; ".join(unknown)
    else:
        verdict = "gate passed: " + ", ".join(g.text for g in cmp.gates)
    return "; ".join(parts) + "; " + verdict


def table(cmp: Comparison, title: str) -> Table:
    """One row a kernel; besides time and the gated figures, a column for each figure that moved
    (>= 1 %) anywhere."""
    gated = {g.figure for g in cmp.gates}
    shown = [n for n in cmp.kernels[0].changes if n == "duration_ns" or n in gated
             or any(k.moved(n) for k in cmp.kernels)] if cmp.kernels else []
    launches = any(k.base and k.cand and len(k.base.launches) != len(k.cand.launches) for k in cmp.kernels)
    cols = [Col("rank", "#", right=True), Col("name", "kernel", elide=NAME, code=True),
            Col("status", "status", colour=lambda s: "red" if s.startswith(("FAIL", "NOT")) else None)]
    if launches:
        cols.append(Col("launches", "launches", drop=5))
    for i, n in enumerate(shown):
        head, scale, spec = _spec(n)
        cols.append(Col(n, head, change_text(n, scale, spec, cmp.gates), right=True, drop=0 if i == 0 else 10 + i))
    cols.append(Col("bound", "bound", colour=lambda s: BOUND_ANSI.get(s.split(" → ")[-1].rstrip("?")), drop=3))
    rows = []
    for k in cmp.kernels:
        row: list[Any] = [k.rank, k.name, k.status]
        if launches:
            row.append(f"{len(k.base.launches) if k.base else 0} → {len(k.cand.launches) if k.cand else 0}")
        row += [k.changes[n] for n in shown] + [_bound(k)]
        rows.append(row)
    notes = [f"context: {m}" if m.endswith("(not checked)") else
             f"context differs (compared anyway, --allow-mismatch): {m}" for m in cmp.mismatches]
    notes += [n for n in (coverage(cmp),) if n]
    notes += [f"#{k.rank} paired by base name: {k.name} (baseline) with {k.cand_name} (candidate)"
              for k in cmp.kernels if k.matched == "base name"]
    notes += [f"#{k.rank} {k.name}: {line}" for k in cmp.kernels for line in k.basis]
    notes += [f"#{k.rank} {k.name}: {', '.join(k.failed)}" for k in cmp.failed]
    notes += [f"#{k.rank} {k.name}: not evaluated: {', '.join(f'{t} ({why})' for t, why in k.unevaluated)}"
              for k in cmp.unevaluated]
    notes.append(summary(cmp))
    return Table(tuple(cols), rows, title, tuple(notes))


def to_csv(cmp: Comparison) -> str:
    """Long form, one row a kernel and figure: raw values in the column spec's units."""
    buf = io.StringIO()
    w = CsvWriter(buf)
    w.writerow(["kernel", "candidate_kernel", "matched_by", "status", "figure", "unit", "baseline", "candidate",
                "change", "change_pct", "failed_gates", "unevaluated_gates"])
    for k in cmp.kernels:
        for n, c in k.changes.items():
            on = {g.text for g in cmp.gates if g.figure == n}
            w.writerow([k.name, k.cand_name or "", k.matched or "", k.status, n, UNITS[n],
                        *("" if v is None else v for v in (c.base, c.cand, c.delta, c.pct)),
                        " | ".join(t for t in k.failed if t in on),
                        " | ".join(f"{t} ({why})" for t, why in k.unevaluated if t in on)])
    return buf.getvalue()


def document(cmp: Comparison, baseline: str, candidate: str) -> dict[str, Any]:
    def num(v: float | None) -> float | None:
        return None if v is None or math.isinf(v) else v

    return {
        "baseline": baseline, "candidate": candidate, "context_mismatches": list(cmp.mismatches),
        "metric_sets": dict(zip(SIDES, cmp.metric_sets, strict=True)),
        "left_out": dict(zip(SIDES, map(list, cmp.left_out), strict=True)),
        "gates": [g.text for g in cmp.gates], "passed": cmp.passed,
        "summed_kernel_time_ns": {"baseline": cmp.total.base, "candidate": cmp.total.cand,
                                  "change_pct": num(cmp.total.pct), "basis": cmp.total_basis,
                                  "failed_gates": list(cmp.total_failed),
                                  "unevaluated_gates": list(cmp.total_unevaluated)},
        "kernels": [{"kernel": k.name, "candidate_kernel": k.cand_name, "matched_by": k.matched, "status": k.status,
                     "failed_gates": list(k.failed), "basis": list(k.basis),
                     "unevaluated_gates": [{"gate": t, "why": why} for t, why in k.unevaluated],
                     "launches": [len(k.base.launches) if k.base else 0, len(k.cand.launches) if k.cand else 0],
                     "figures": {n: {"unit": UNITS[n], "baseline": c.base, "candidate": c.cand, "change": c.delta,
                                     "change_pct": num(c.pct)} for n, c in k.changes.items()}}
                    for k in cmp.kernels],
    }
