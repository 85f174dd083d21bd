"""A campaign cell: the ncu figures of one capture, as ncu_kernels.json, importable from a bundle,
a .ncu-rep or CSV exports. Import copies the sources into the cell and is idempotent: the same
inputs give the same bytes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from ..analysis.categories import categorize
from ..analysis.pipeline import analyze, bundles
from ..capture.bundle import sha256
from ..errors import KernelscopeError
from ..ingest import expand
from ..model import Assessment
from ..report.writers import write_atomic
from .store import CELL_FILE, cell_dir, ensure_config

SCHEMA_VERSION = 1
SOURCES = "sources"


def binding_sol(a: Assessment) -> tuple[float | None, str | None]:
    """The %SoL against the roof that binds (the higher one), and its ceiling key."""
    if a.bound == "unmeasured":
        return None, None
    pc, pm = a.pct_sol_compute or 0.0, a.pct_sol_memory or 0.0
    return (pc, a.compute_ceiling_key) if pc >= pm else (pm, a.memory_ceiling_key)


def kernel_row(a: Assessment) -> dict[str, Any]:
    r = a.record
    pct, key = binding_sol(a)
    tensor = None if r.flops is None else sum(v for k, v in r.flops.items() if k.startswith("tensor_"))
    return {
        "name": r.name, "name_full": r.name_full, "category": categorize(r.name, r.name_full)[0],
        "launch_id": r.launch_id, "device": r.device, "kernel_time_ns": r.duration_ns, "dram_bytes_total": r.dram_bytes,
        "flops": None if r.flops is None else dict(r.flops), "tensor_flops_total": tensor,
        "arithmetic_intensity_flops_per_byte": r.arithmetic_intensity, "achieved_tflops": r.achieved_tflops,
        "achieved_dram_pct_peak": r.dram_throughput_pct, "achieved_sm_pct_peak": r.sm_busy_pct,
        "achieved_occupancy_pct": r.achieved_occupancy_pct, "theoretical_occupancy_pct": r.theoretical_occupancy_pct,
        "block_limit_factor": r.occupancy_limiter, "regs_per_thread": r.registers_per_thread,
        "smem_per_block_bytes": r.shared_mem_per_block_bytes, "tensor_pipe_active_pct": r.tensor_pipe_active_pct,
        "pct_sol": pct, "ceiling_key": key, "pct_sol_compute": a.pct_sol_compute,
        "pct_sol_memory": a.pct_sol_memory, "bound": a.bound, "verdict": a.verdict,
        "next_levers": [{"rule": lv.rule, "action": lv.action, "confirm": lv.confirm} for lv in a.next_levers],
        "unmeasured": list(r.unmeasured),
    }


def _copy_sources(inputs: list[str], stage: Path) -> list[str]:
    """Copy every input (a bundle dir whole, or a file) under `stage`; return the copies' paths."""
    copies = []
    for i, raw in enumerate(inputs):
        src = Path(raw)
        dst = stage / f"{i:02d}-{src.name}"
        if src.is_dir():
            shutil.copytree(src, dst)
        else:
            shutil.copy2(src, dst)
        copies.append(str(dst))
    return copies


def import_ncu(root: Path, slug: str, cell_id: str, inputs: list[str], hw: str | None = None) -> Path:
    """Analyse the inputs and (re)write the cell; the cell is replaced whole, never half-written."""
    target = cell_dir(root, slug, cell_id)
    expand(inputs)  # refuse missing inputs before touching the campaign
    ensure_config(root, slug)
    stage = target.parent / f".{cell_id}.importing"
    shutil.rmtree(stage, ignore_errors=True)
    (stage / SOURCES).mkdir(parents=True)
    try:
        copies = _copy_sources(inputs, stage / SOURCES)
        items, _ = analyze(copies, hw=hw)
        if not items:
            raise KernelscopeError(f"{', '.join(inputs)}: no kernel launches to import")
        manifests = bundles(copies)
        sources = []
        for raw, copy in zip(inputs, copies, strict=True):
            files = [Path(copy)] if Path(copy).is_file() else sorted(p for p in Path(copy).rglob("*") if p.is_file())
            sources.append({
                "input": Path(raw).name, "copy": str(Path(copy).relative_to(stage)),
                "sha256": {str(f.relative_to(stage)): sha256(f) for f in files},
                "manifest": {k: v for k, v in (manifests.get(copy) or {}).items()
                             if k not in {"artifacts_sha256"}} or None,
            })
        doc = {"schema_version": SCHEMA_VERSION, "campaign": slug, "cell_id": cell_id,
               "hw_key": items[0].hw_key, "captured_sources": sources,
               "kernels": [kernel_row(a) for a in items]}
        text = json.dumps(doc, indent=2, allow_nan=False) + "\n"
        write_atomic({CELL_FILE: text}, stage)
        if target.exists():
            shutil.rmtree(target)
        stage.rename(target)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return target / CELL_FILE
