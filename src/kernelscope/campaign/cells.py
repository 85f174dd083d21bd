"""A campaign cell: the ncu figures of one capture, as ncu_kernels.json (kernel objects of the one
column spec), importable from a bundle, a .ncu-rep or CSV exports. Import copies the sources into
the cell and is idempotent: the same inputs give the same bytes.

Writes are crash- and concurrency-safe: one lock per campaign, the new cell staged in a hidden
folder and renamed in, the old one moved aside first and deleted last, so a kill at any moment
leaves either the old cell or the new one, and readers skip hidden folders.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..analysis.pipeline import analyze, bundles
from ..columns import SCHEMA_VERSION, kernel_object
from ..errors import InputError, KernelscopeError
from ..files import write_file
from ..ingest import expand
from ..manifest import sha256_file
from .store import CELL_FILE, campaign_dir, cell_dir, ensure_config

SOURCES = "sources"


@contextmanager
def campaign_lock(root: Path, slug: str) -> Iterator[None]:
    """One writer at a time per campaign (an flock: released by the kernel if the process dies)."""
    directory = campaign_dir(root, slug)
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / ".lock").open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _copy_sources(inputs: list[str], stage: Path) -> list[Path]:
    """Copy every input (a bundle dir whole, or a file) under `stage`; links are not followed out."""
    stage.mkdir(parents=True, exist_ok=True)
    copies = []
    for i, raw in enumerate(inputs):
        src = Path(raw)
        dst = stage / f"{i:02d}-{src.name}"
        if src.is_dir():
            root = src.resolve()
            for path in src.rglob("*"):
                if path.is_symlink() and not path.resolve().is_relative_to(root):
                    raise InputError(path, "a link that leads outside the bundle; refusing to copy it")
            shutil.copytree(src, dst, symlinks=True)
        else:
            shutil.copyfile(src, dst)
        copies.append(dst)
    return copies


def _sources(inputs: list[str], copies: list[Path], stage: Path) -> list[dict[str, Any]]:
    manifests = bundles(copies)
    out = []
    for raw, copy in zip(inputs, copies, strict=True):
        files = [copy] if copy.is_file() else sorted(p for p in copy.rglob("*") if p.is_file() and not p.is_symlink())
        m = manifests.get(copy)
        out.append({
            "input": Path(raw).name, "copy": str(copy.relative_to(stage)),
            "sha256": {str(f.relative_to(stage)): sha256_file(f) for f in files},
            "manifest": None if m is None else json.loads(m.to_json()),
        })
    return out


def import_ncu(root: Path, slug: str, cell_id: str, inputs: list[str], hw: str | None = None) -> Path:
    """Analyse the inputs and (re)write the cell; the cell is replaced whole, never half-written."""
    target = cell_dir(root, slug, cell_id)
    if not inputs:
        raise KernelscopeError("give at least one bundle dir, .ncu-rep or CSV export to import")
    expand(inputs)  # refuse missing inputs before touching the campaign
    with campaign_lock(root, slug):
        ensure_config(root, slug)
        target.parent.mkdir(parents=True, exist_ok=True)
        stage = Path(tempfile.mkdtemp(prefix=f".{cell_id}.importing.", dir=target.parent))
        aside: Path | None = None
        try:
            copies = _copy_sources(inputs, stage / SOURCES)
            items, _ = analyze(copies, hw=hw)
            if not items:
                raise KernelscopeError(f"{', '.join(inputs)}: no kernel launches to import")
            kernels = [kernel_object(a) for a in items]
            for k in kernels:  # paths inside the cell, never this machine's
                k["source"] = str(Path(k["source"]).relative_to(stage))
            doc = {"schema_version": SCHEMA_VERSION, "campaign": slug, "cell_id": cell_id,
                   "hw_key": items[0].hw_key, "captured_sources": _sources(inputs, copies, stage), "kernels": kernels}
            write_file(json.dumps(doc, indent=1, allow_nan=False) + "\n", stage / CELL_FILE)
            if target.exists():
                aside = Path(tempfile.mkdtemp(prefix=f".{cell_id}.old.", dir=target.parent))
                os.replace(target, aside / "cell")
            os.replace(stage, target)
        except BaseException:
            if aside is not None and not target.exists():
                os.replace(aside / "cell", target)  # put the old cell back
            raise
        finally:
            shutil.rmtree(stage, ignore_errors=True)
            if aside is not None:
                shutil.rmtree(aside, ignore_errors=True)
    return target / CELL_FILE
