"""Gates a campaign must pass before its claims are believed (`campaign check --strict`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import manifest
from ..manifest import BundleManifest

KRHPA_AXES = ("K", "R", "H", "P", "A")
GEMM_CATEGORIES = {"GEMM/cuBLAS", "FP4/FP8 BMM", "MoE"}
NEAR_ZERO_TENSOR_PCT = 1.0
# what must agree between the arms of a comparison
CONTEXT_KEYS = ("hw_key", "gpu_name", "metric_set", "model", "shapes")


def krhpa_problems(block: Any) -> list[str]:
    """candidate and baseline each need a non-empty name and K, R, H, P, A integers 1..4."""
    if not isinstance(block, Mapping):
        return ["krhpa block missing (needs candidate and baseline, each with name and K R H P A in 1..4)"]
    problems = []
    for arm in ("candidate", "baseline"):
        spec = block.get(arm)
        if not isinstance(spec, Mapping):
            problems.append(f"krhpa.{arm} missing")
            continue
        if not isinstance(spec.get("name"), str) or not spec["name"].strip():
            problems.append(f"krhpa.{arm}.name must be a non-empty string")
        for axis in KRHPA_AXES:
            value = spec.get(axis)
            # bool is an int subclass in Python: True must not pass as 1
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 4:
                problems.append(f"krhpa.{arm}.{axis} must be an integer 1..4, got {value!r}")
    return problems


def cell_manifests(cell: Mapping[str, Any], cell_id: str) -> list[BundleManifest]:
    return [manifest.parse(s["manifest"], f"cell {cell_id}") for s in cell.get("captured_sources", [])
            if isinstance(s, Mapping) and s.get("manifest")]


def has_roofline(cell: Mapping[str, Any]) -> bool:
    """Some kernel of the cell has a roofline verdict (FLOP and byte counters were collected): neither
    unmeasured nor provisional."""
    return any(k.get("bound") not in (None, "unmeasured") and not k.get("provisional")
               for k in cell.get("kernels", []))


def cell_context(cell: Mapping[str, Any], config: Mapping[str, Any], cell_id: str) -> dict[str, Any]:
    """What a comparison's arms must share, read from the cell's sources and the campaign config."""
    manifests = cell_manifests(cell, cell_id)
    first = manifests[0] if manifests else None
    kernels = cell.get("kernels", [])
    if first is not None:
        metric_set, shapes = first.metric_sets, first.shapes
    else:  # a bare report: what its counters cover is what matters for a comparison
        metric_set = f"report {'with' if has_roofline(cell) else 'without'} FLOP/byte counters"
        shapes = None
    return {
        "hw_key": cell.get("hw_key"),
        "gpu_name": (first.gpu.name if first else None) or next((k.get("device") for k in kernels if k.get("device")),
                                                                 None),
        "metric_set": metric_set,
        "model": (first.context.get("model") if first else None) or (config.get("context") or {}).get("model"),
        "shapes": shapes,
    }


def h_suggestions(cells: Mapping[str, Mapping[str, Any]]) -> list[str]:
    out = []
    for cell_id, cell in cells.items():
        for k in cell.get("kernels", []):
            pipe = k.get("tensor_pipe_active_pct")
            if k.get("category") in GEMM_CATEGORIES and pipe is not None and pipe < NEAR_ZERO_TENSOR_PCT:
                out.append(f"suggest H1: {cell_id}/{k['name']} is GEMM-class with tensor pipe {pipe:.2f} % active")
    return out


def check(config: Mapping[str, Any], cells: Mapping[str, Mapping[str, Any]]) -> tuple[list[str], list[str]]:
    """(failures, notes). Failures are the reasons --strict exits 1; a campaign with no cell has
    nothing its gates could pass on (an import that failed leaves its config and no cell)."""
    failures: list[str] = [] if cells else ["no cell: nothing was imported, so no gate has anything to pass on"]
    measured = {cid for cid, c in cells.items() if has_roofline(c)}
    for cid, cell in cells.items():
        for k in cell.get("kernels", []):
            if (k.get("bound") == "unmeasured" or k.get("provisional")) and k.get("pct_sol") is not None:
                failures.append(f"{cid}/{k['name']}: claims pct_sol {k['pct_sol']} with a bound that is "
                                f"{'provisional' if k.get('provisional') else 'unmeasured'}")
    for claim in config.get("claims") or []:
        cid = claim.get("cell")
        if "pct_sol" in claim and cid not in measured:
            failures.append(f"claim of pct_sol {claim['pct_sol']} on cell {cid!r} rests only on unmeasured or "
                            "provisional kernels (no FLOP/byte counters): recapture with --set roofline")
    for comp in config.get("comparisons") or []:
        base, cand = comp.get("baseline"), comp.get("candidate")
        if base not in cells or cand not in cells:
            failures.append(f"comparison {base!r} vs {cand!r}: cell missing")
            continue
        a, b = cell_context(cells[base], config, base), cell_context(cells[cand], config, cand)
        diffs = [f"{k}: {a[k]!r} vs {b[k]!r}" for k in CONTEXT_KEYS if a[k] != b[k]]
        if diffs:
            failures.append(f"comparison {base} vs {cand}: arms differ in context ({'; '.join(diffs)})")
    if measured:  # an L4 campaign: an ncu roofline is present
        failures += [f"L4 campaign (ncu roofline in {', '.join(sorted(measured))}): {p}"
                     for p in krhpa_problems(config.get("krhpa"))]
    return failures, h_suggestions(cells)
