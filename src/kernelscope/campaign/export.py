"""One kernels table across a campaign, every figure with its full context as columns, written as
Parquet so many campaigns can be queried together (DuckDB, Spark). Column names are the one
column spec's flattened names (`flops.tensor_fp8`), prefixed context columns beside them."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from ..columns import flatten
from ..files import write_file
from .check import cell_context
from .store import cells, load_config


def rows(root: Path, slug: str) -> list[dict[str, Any]]:
    config = load_config(root, slug)
    context = config.get("context") or {}
    out = []
    for cell_id, cell in cells(root, slug).items():
        ctx = cell_context(cell, config, cell_id)
        for k in cell.get("kernels", []):
            out.append({"campaign": slug, "cell_id": cell_id,
                        **{f"context_{f}": (None if v is None else str(v)) for f, v in context.items()},
                        **{f"cell_{f}": (None if v is None else str(v)) for f, v in ctx.items()}, **flatten(k)})
    return out


def export_parquet(root: Path, slug: str, out_dir: Path) -> Path:
    import pandas  # only this verb needs pandas and pyarrow

    buf = io.BytesIO()
    pandas.DataFrame(rows(root, slug)).to_parquet(buf, index=False)
    return write_file(buf.getvalue(), out_dir / f"{slug}-kernels.parquet")
