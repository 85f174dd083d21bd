"""The kernels of a campaign as Parquet, every figure with its full context as columns, so many
campaigns can be queried together (DuckDB, Spark): the way out once a campaign outgrows one
machine's report.

Hive-partitioned by campaign and cell (`DIR/campaign=SLUG/cell_id=ID/kernels.parquet`), so the
exports of many campaigns into one directory are one dataset, a re-export replaces only its own
campaign, and a query that filters on a campaign or cell reads only those files. Column names are
the one column spec's flattened names (`flops.tensor_fp8`), context columns prefixed beside them;
column types come from the spec too (a figure is a double in every file, even where a cell has no
value for it), so files of different campaigns and versions union by name.
"""

from __future__ import annotations

import io
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..columns import FLAT_KINDS, flatten
from ..errors import KernelscopeError, signals_held
from ..files import umask_mode, write_file
from .cells import swap_in
from .check import cell_context
from .store import cells, check_name, load_config

if TYPE_CHECKING:
    import pyarrow

PARTITION_FILE = "kernels.parquet"


def cell_rows(cell_id: str, cell: Mapping[str, Any], config: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """A cell's kernels as flat rows with the campaign's and the cell's context (the partition
    columns, campaign and cell_id, are the file's path)."""
    context = config.get("context") or {}
    ctx = cell_context(cell, config, cell_id)
    head = {**{f"context_{f}": (None if v is None else str(v)) for f, v in context.items()},
            **{f"cell_{f}": (None if v is None else str(v)) for f, v in ctx.items()}}
    for k in cell.get("kernels", []):
        yield {**head, **flatten(k)}


def arrow_type(column: str) -> pyarrow.DataType:
    """A flat column's Parquet type from the column spec (columns.FLAT_KINDS): a figure is a double in
    every file, even where a cell has no value for it; context columns are text."""
    import pyarrow as pa

    kinds = {"number": pa.float64(), "integer": pa.int64(), "boolean": pa.bool_(), "text": pa.string(),
             "list": pa.string()}
    return kinds[FLAT_KINDS.get(column, "text")]


def table(rows: list[dict[str, Any]]) -> pyarrow.Table:
    import pyarrow as pa

    names = list(dict.fromkeys(name for row in rows for name in row))
    columns = {n: [row.get(n) for row in rows] for n in names}
    schema = pa.schema([(n, arrow_type(n)) for n in names])
    return pa.table(columns, schema=schema)


def export_parquet(root: Path, slug: str, out_dir: Path) -> Path:
    """Write (or replace) the campaign's partition under `out_dir`; returns its directory."""
    import pyarrow.parquet as pq  # only this verb needs pyarrow

    config = load_config(root, slug)
    found = cells(root, slug)
    if not found:
        raise KernelscopeError(f"campaign {slug!r} has no cells to export")
    target = out_dir / f"campaign={check_name('campaign', slug)}"
    if out_dir.exists() and not out_dir.is_dir():
        raise KernelscopeError(f"{out_dir}: not a directory; the export is written into one (the dataset's)")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        if target.is_symlink() or (target.exists() and not target.is_dir()):
            raise KernelscopeError(f"{target}: not a directory (a file or a link); refusing to replace it")
    except OSError as exc:
        raise KernelscopeError(f"{out_dir}: cannot write the export here ({exc.strerror or exc})") from exc
    old: Path | None = None
    try:
        with signals_held():
            stage = old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=out_dir))
        stage.chmod(umask_mode(0o777))  # published: mkdtemp's 0700 would hide it from the dataset's readers
        for cell_id, cell in found.items():
            buf = io.BytesIO()
            pq.write_table(table(list(cell_rows(cell_id, cell, config))), buf)
            write_file(buf.getvalue(), stage / f"cell_id={cell_id}" / PARTITION_FILE)
        with signals_held():  # both renames, or neither
            old = swap_in(stage, target)
    except OSError as exc:
        raise KernelscopeError(f"{target}: cannot write the export ({exc.strerror or exc})") from exc
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)  # the failed stage, or the old partition
    return target

