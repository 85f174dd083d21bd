"""Compare a baseline and a candidate kernel by kernel, as a gate. Kernels are matched by identity
(the full kernel name, template arguments included; the n-th kernel of a name in one with the
n-th in the other), each side's launches
of a kernel together: time is the mean per launch, the other figures are the representative
launch's (the launch whose verdict stands for the kernel, analysis/groups.py). A comparison means
something only when both sides were captured alike: the same device, metric set, measured figures,
shapes and model (`mismatches`).
A time gate also applies to the summed kernel time of each side, which sees what a match by name
cannot: a kernel added, or one swapped for a differently named one (a library picking another tile
configuration) that is slower."""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..analysis.groups import KernelGroup, display_names
from ..columns import value
from ..manifest import Recorded
from ..model import Assessment
from . import kernels
from .gates import Change, Gate
from .style import BOUND_ANSI
from .table import NAME, Col, CsvWriter, Table

CONTEXT_FIELDS = ("device", "metric_set", "unmeasured", "shapes", "model")
MOVED_PCT = 1.0  # a figure moved when it changed by at least this share of its baseline
# (column-spec name, label, scale, format): the figures compared, time first
FIGURES: tuple[tuple[str, str, float, str], ...] = (
    ("duration_ns", "time", 1e-3, ".1f"), ("pct_sol", "SoL", 1.0, ".0f"), ("achieved_tflops", "", 1.0, ".1f"),
    ("achieved_dram_tbps", "", 1.0, ".2f"), ("arithmetic_intensity", "AI", 1.0, ".1f"),
    ("achieved_occupancy_pct", "occ", 1.0, ".0f"), ("sm_busy_pct", "SM busy", 1.0, ".0f"),
    ("registers_per_thread", "regs", 1.0, ".0f"),
)


def bundle_context(m: Recorded | None, items: Sequence[Assessment]) -> dict[str, Any]:
    """What must agree between the two sides, for a bundle or a bare report alike (its own record of
    its capture; a CSV export has none): which figures a side could not measure says what its
    capture collected."""
    everywhere = set.intersection(*(set(a.record.unmeasured) for a in items)) if items else set()
    ctx: dict[str, Any] = {
        "device": (m.gpu.name if m else None) or next((a.record.device for a in items if a.record.device), None),
        "metric_set": "unknown", "unmeasured": ", ".join(sorted(everywhere)) or "none",
        "shapes": "unknown", "model": "unknown",
    }
    if m is not None:
        ctx.update(metric_set=m.metric_sets, shapes=m.shapes or "unknown",
                   model=m.context.get("model") or "unknown")
    return ctx


def _lacks(side: str, names: set[str]) -> str:
    shown = sorted(names)
    return f"the {side} lacks {', '.join(shown[:6])}{f' (+{len(shown) - 6} more)' if len(shown) > 6 else ''}"


def mismatches(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    out = []
    for k in CONTEXT_FIELDS:
        if a[k] == b[k]:
            continue
        if k == "unmeasured":  # captured with different counters: say which figures each side lacks
            x, y = (set() if v == "none" else set(v.split(", ")) for v in (a[k], b[k]))
            out.append("measured figures differ: " + "; ".join(
                _lacks(side, d) for side, d in (("baseline", x - y), ("candidate", y - x)) if d))
        else:
            out.append(f"{k}: {a[k]!r} vs {b[k]!r}")
    return out


def figure(g: KernelGroup | None, name: str) -> float | None:
    if g is None:
        return None
    return g.mean_ns if name == "duration_ns" else value(g.representative, name)


@dataclass(frozen=True)
class KernelDiff:
    rank: int
    name: str
    base: KernelGroup | None
    cand: KernelGroup | None
    changes: Mapping[str, Change]
    failed: tuple[str, ...]  # the gates this kernel failed
    unevaluated: tuple[str, ...]  # gates that could not be evaluated (a side unmeasured)

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
        moved = any(self.moved(n) for n in self.changes)
        bounds = {kernels.bound_cell(side.representative) for side in (self.base, self.cand)}
        return "moved" if moved or len(bounds) > 1 else "same"


@dataclass(frozen=True)
class Comparison:
    kernels: tuple[KernelDiff, ...]
    gates: tuple[Gate, ...]
    mismatches: tuple[str, ...]
    total: Change  # summed kernel time (ns) of each side, see `summed`
    total_basis: str  # what was summed
    total_failed: tuple[str, ...]  # the time gates the summed kernel time crossed

    @property
    def failed(self) -> list[KernelDiff]:
        return [k for k in self.kernels if k.failed]

    @property
    def passed(self) -> bool:
        return not self.failed and not self.total_failed


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


def compare(base: Sequence[Assessment], cand: Sequence[Assessment], gates: Sequence[Gate] = (),
            context_mismatches: Sequence[str] = ()) -> Comparison:
    names = [f[0] for f in FIGURES] + [g.figure for g in gates if g.figure not in {f[0] for f in FIGURES}]
    left = [r.group for r in kernels.ranked(base)]
    right = [r.group for r in kernels.ranked(cand)]
    pending: dict[str, list[KernelGroup]] = {}
    for g in right:
        pending.setdefault(g.name_full, []).append(g)
    pairs: list[tuple[KernelGroup | None, KernelGroup | None]] = [
        (g, pending[g.name_full].pop(0) if pending.get(g.name_full) else None) for g in left]
    pairs += [(None, g) for g in right if any(g is p for p in pending.get(g.name_full, ()))]
    kernels_seen = {g.name_full: g.name for g in [*left, *right]}
    label = dict(zip(kernels_seen, display_names(((n, f) for f, n in kernels_seen.items())), strict=True))
    out = []
    for rank, (b, c) in enumerate(pairs, 1):
        changes = {n: Change(figure(b, n), figure(c, n)) for n in names}
        verdicts = [(g.text, g.fails(changes[g.figure])) for g in gates] if b and c else []
        either = b if b is not None else c
        assert either is not None
        out.append(KernelDiff(rank, label[either.name_full], b, c, changes, tuple(t for t, v in verdicts if v),
                              tuple(t for t, v in verdicts if v is None)))
    total, basis = summed(pairs)
    total_failed = tuple(g.text for g in gates if g.figure == "duration_ns" and g.fails(total))
    return Comparison(tuple(out), tuple(gates), tuple(context_mismatches), total, basis, total_failed)


def _spec(name: str) -> tuple[str, float, str]:
    for n, label, scale, spec in FIGURES:
        if n == name:
            return kernels.heading(label, n, scale), scale, spec
    return name, 1.0, ".4g"


def _change_text(scale: float, spec: str) -> Any:
    def fmt(c: Change) -> str:
        b = "—" if c.base is None else format(c.base * scale, spec)
        a = "—" if c.cand is None else format(c.cand * scale, spec)
        pct = c.pct
        return f"{b} → {a}" + ("" if pct is None or math.isinf(pct) else f" ({pct:+.1f} %)")
    return fmt


def _bound(k: KernelDiff) -> str:
    b = kernels.bound_cell(k.base.representative) if k.base else "—"
    c = kernels.bound_cell(k.cand.representative) if k.cand else "—"
    return b if b == c else f"{b} → {c}"


def summary(cmp: Comparison) -> str:
    counts: dict[str, int] = {}
    for k in cmp.kernels:
        counts[k.status] = counts.get(k.status, 0) + 1
    parts = [f"{n} {s}" for s, n in counts.items()]
    parts.append(f"summed kernel time µs ({cmp.total_basis}) {_change_text(1e-3, '.1f')(cmp.total)}")
    if not cmp.gates:
        return "; ".join(parts) + "; no --fail-on gate"
    failed = cmp.failed
    crossed = ([f"{len(failed)} kernel(s) crossed " + ", ".join(sorted({t for k in failed for t in k.failed}))]
               if failed else [])
    crossed += [f"summed kernel time crossed {', '.join(cmp.total_failed)}"] if cmp.total_failed else []
    verdict = ("gate FAILED: " + "; ".join(crossed) if crossed
               else "gate passed: " + ", ".join(g.text for g in cmp.gates))
    return "; ".join(parts) + "; " + verdict


def table(cmp: Comparison, title: str) -> Table:
    """One row a kernel; besides time, a column for each figure that moved (>= 1 %) anywhere."""
    shown = [n for n in cmp.kernels[0].changes if n == "duration_ns" or any(k.moved(n) for k in cmp.kernels)] \
        if cmp.kernels else []
    launches = any(k.base and k.cand and len(k.base.launches) != len(k.cand.launches) for k in cmp.kernels)
    cols = [Col("rank", "#", right=True), Col("name", "kernel", elide=NAME, code=True),
            Col("status", "status", colour=lambda s: "red" if s.startswith("FAIL") else None)]
    if launches:
        cols.append(Col("launches", "launches", drop=5))
    for i, n in enumerate(shown):
        head, scale, spec = _spec(n)
        cols.append(Col(n, head, _change_text(scale, spec), right=True, drop=0 if i == 0 else 10 + i))
    cols.append(Col("bound", "bound", colour=lambda s: BOUND_ANSI.get(s.split(" → ")[-1].rstrip("?")), drop=3))
    rows = []
    for k in cmp.kernels:
        row: list[Any] = [k.rank, k.name, k.status]
        if launches:
            row.append(f"{len(k.base.launches) if k.base else 0} → {len(k.cand.launches) if k.cand else 0}")
        row += [k.changes[n] for n in shown] + [_bound(k)]
        rows.append(row)
    notes = [f"context differs (compared anyway, --allow-mismatch): {m}" for m in cmp.mismatches]
    notes += [f"#{k.rank} {k.name}: {', '.join(k.failed)}" for k in cmp.failed]
    notes += [f"#{k.rank} {k.name}: not evaluated (unmeasured on a side): {', '.join(k.unevaluated)}"
              for k in cmp.kernels if k.unevaluated]
    notes.append(summary(cmp))
    return Table(tuple(cols), rows, title, tuple(notes))


def to_csv(cmp: Comparison) -> str:
    """Long form, one row a kernel and figure: raw values in the column spec's units."""
    buf = io.StringIO()
    w = CsvWriter(buf)
    w.writerow(["kernel", "status", "figure", "baseline", "candidate", "change", "change_pct", "failed_gates"])
    for k in cmp.kernels:
        for n, c in k.changes.items():
            w.writerow([k.name, k.status, n, *("" if v is None else v for v in (c.base, c.cand, c.delta, c.pct)),
                        " | ".join(g.text for g in cmp.gates if g.figure == n and g.text in k.failed)])
    return buf.getvalue()


def document(cmp: Comparison, baseline: str, candidate: str) -> dict[str, Any]:
    def num(v: float | None) -> float | None:
        return None if v is None or math.isinf(v) else v

    return {
        "baseline": baseline, "candidate": candidate, "context_mismatches": list(cmp.mismatches),
        "gates": [g.text for g in cmp.gates], "passed": cmp.passed,
        "summed_kernel_time_ns": {"baseline": cmp.total.base, "candidate": cmp.total.cand,
                                  "change_pct": num(cmp.total.pct), "basis": cmp.total_basis,
                                  "failed_gates": list(cmp.total_failed)},
        "kernels": [{"kernel": k.name, "status": k.status, "failed_gates": list(k.failed),
                     "launches": [len(k.base.launches) if k.base else 0, len(k.cand.launches) if k.cand else 0],
                     "figures": {n: {"baseline": c.base, "candidate": c.cand, "change": c.delta,
                                     "change_pct": num(c.pct)} for n, c in k.changes.items()}}
                    for k in cmp.kernels],
    }
