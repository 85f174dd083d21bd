"""One kernels table across a campaign, every figure with its full context as columns, written as
Parquet so many campaigns can be queried together (DuckDB, Spark)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas

from ..report.writers import write_bytes_atomic
from .check import cell_context
from .store import cells, load_config


def rows(root: Path, slug: str) -> list[dict[str, Any]]:
    config = load_config(root, slug)
    context = config.get("context") or {}
    out = []
    for cell_id, cell in cells(root, slug).items():
        ctx = cell_context(cell, config)
        for k in cell.get("kernels", []):
            row: dict[str, Any] = {"campaign": slug, "cell_id": cell_id,
                                   **{f"context_{f}": (None if v is None else str(v)) for f, v in context.items()},
                                   **{f"cell_{f}": v for f, v in ctx.items()}}
            for key, value in k.items():
                if key == "flops":
                    for cls, v in (value or {}).items():
                        row[f"flops_{cls}"] = v
                elif isinstance(value, (list, dict)):
                    row[key] = json.dumps(value)
                else:
                    row[key] = value
            out.append(row)
    return out


def export_parquet(root: Path, slug: str, out_dir: Path) -> Path:
    frame = pandas.DataFrame(rows(root, slug))
    path = out_dir / f"{slug}-kernels.parquet"
    return write_bytes_atomic(frame.to_parquet(index=False), path)
