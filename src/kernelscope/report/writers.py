"""Write results: JSON document, CSV, and the terminal table. Files appear whole or not at all."""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..model import Assessment
from .tables import SCHEMA_VERSION, UNITS, flat_row, kernel_dict


def document(items: Sequence[Assessment], context: dict[str, Any]) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "context": context,
        "units": UNITS,
        "kernels": [kernel_dict(a) for a in items],
    }


def to_json(items: Sequence[Assessment], context: dict[str, Any]) -> str:
    return json.dumps(document(items, context), indent=2, allow_nan=False) + "\n"


def to_csv(items: Sequence[Assessment]) -> str:
    rows = [flat_row(a) for a in items]
    columns: list[str] = []
    for row in rows:
        columns += [c for c in row if c not in columns]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def write_atomic(files: dict[str, str], out_dir: Path) -> list[Path]:
    """Write every file to a temp name in `out_dir`, then rename each into place."""
    out_dir.mkdir(parents=True, exist_ok=True)
    staged: list[tuple[str, Path]] = []
    try:
        for name, text in files.items():
            fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=out_dir)
            with os.fdopen(fd, "w") as fh:
                fh.write(text)
            staged.append((name, Path(tmp)))
        return [Path(os.replace(tmp, out_dir / name) or out_dir / name) for name, tmp in staged]
    finally:
        for _, tmp in staged:
            tmp.unlink(missing_ok=True)
