"""Compare two bundles kernel by kernel, only when their contexts match (or the user says
--allow-mismatch, which then marks every row)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..manifest import BundleManifest
from ..model import Assessment

# context that must agree for a comparison to mean anything
CONTEXT_FIELDS = ("device", "metric_set", "shapes", "model")


def bundle_context(m: BundleManifest | None, items: Sequence[Assessment]) -> dict[str, Any]:
    if m is None:
        return {"device": items[0].record.device if items else None, "metric_set": "unknown",
                "shapes": "unknown", "model": "unknown"}
    return {
        "device": m.gpu.name or (items[0].record.device if items else None),
        "metric_set": "+".join([m.metric_set, *m.addons]),
        "shapes": (m.analytic.describe if m.analytic else None) or " ".join(m.target) or "unknown",
        "model": m.context.get("model") or "unknown",
    }


def mismatches(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    return [f"{k}: {a[k]!r} vs {b[k]!r}" for k in CONTEXT_FIELDS if a[k] != b[k]]


@dataclass(frozen=True)
class DiffRow:
    kernel: str
    figure: str
    baseline: float | None
    candidate: float | None

    @property
    def change_pct(self) -> float | None:
        if self.baseline in (None, 0) or self.candidate is None:
            return None
        return 100.0 * (self.candidate - self.baseline) / self.baseline


def _figures(a: Assessment) -> dict[str, float | None]:
    r = a.record
    figs: dict[str, float | None] = {
        "duration_us": None if r.duration_ns is None else r.duration_ns / 1e3, "achieved_tflops": r.achieved_tflops,
        "pct_sol_compute": a.pct_sol_compute, "pct_sol_memory": a.pct_sol_memory,
        "achieved_occupancy_pct": r.achieved_occupancy_pct,
    }
    for reason, share in list((r.warp_stalls or {}).items())[:3]:
        figs[f"stall_{reason}_pct"] = share
    return figs


def diff(base: Sequence[Assessment], cand: Sequence[Assessment]) -> list[DiffRow]:
    """Kernels matched by name, in the baseline's order (the n-th launch of a name with the n-th)."""
    rows = []
    used: dict[str, int] = {}
    for a in base:
        same = [c for c in cand if c.record.name == a.record.name]
        k = used.get(a.record.name, 0)
        used[a.record.name] = k + 1
        b = same[k] if k < len(same) else None
        fa, fb = _figures(a), (_figures(b) if b else {})
        for fig in dict.fromkeys([*fa, *fb]):
            rows.append(DiffRow(a.record.name, fig, fa.get(fig), fb.get(fig)))
    return rows
