"""Write results: JSON document, CSV, and the terminal table. Files appear whole or not at all."""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..analysis.frontier import frontier
from ..model import Assessment
from .tables import SCHEMA_VERSION, UNITS, flat_row, kernel_dict


def document(items: Sequence[Assessment], context: dict[str, Any]) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "context": context,
        "units": UNITS,
        "kernels": [kernel_dict(a) for a in items],
        "frontier": [asdict(f) for f in frontier(items)],
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


def _umask_mode() -> int:
    """mkstemp makes 0600 files; published outputs get the usual 0666 & ~umask."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def write_atomic(files: dict[str, str], out_dir: Path) -> list[Path]:
    """Write every file to a temp name in `out_dir`, then rename each into place."""
    out_dir.mkdir(parents=True, exist_ok=True)
    staged: list[tuple[str, Path]] = []
    try:
        for name, text in files.items():
            fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=out_dir)
            with os.fdopen(fd, "w") as fh:
                fh.write(text)
            os.chmod(tmp, _umask_mode())
            staged.append((name, Path(tmp)))
        return [Path(os.replace(tmp, out_dir / name) or out_dir / name) for name, tmp in staged]
    finally:
        for _, tmp in staged:
            tmp.unlink(missing_ok=True)


def write_bytes_atomic(data: bytes, out: Path) -> Path:
    """One binary file (an image), written to a temp name beside it and renamed."""
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, _umask_mode())
        os.replace(tmp, out)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return out
