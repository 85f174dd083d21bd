"""A campaign cell: the ncu figures of one capture, as ncu_kernels.json (kernel objects of the one
column spec), importable from a bundle, a .ncu-rep or CSV exports. Import copies the sources into
the cell and is idempotent: the same inputs give the same bytes.

Writes are crash- and concurrency-safe: one lock per campaign (an flock, released by the kernel
when its holder dies), the new cell staged in a hidden folder and swapped in whole. On Linux the
swap is one atomic renameat2(RENAME_EXCHANGE), so a kill at any moment leaves the old cell or the
new one under the cell's name, never neither; elsewhere the old cell is moved aside first and put
back by the next writer if a kill came between the two renames. Every writer, on taking the lock,
first removes what killed writers left (hidden stages, cells moved aside), and readers skip
hidden folders.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..analysis.pipeline import analyze, bundles
from ..columns import SCHEMA_VERSION, kernel_object
from ..errors import InputError, KernelscopeError, signals_held
from ..files import MAX_INPUT_BYTES, write_file
from ..ingest import expand
from ..manifest import sha256_file
from .store import CELL_FILE, campaign_dir, cell_dir, ensure_config

SOURCES = "sources"
STAGE, ASIDE = "importing", "old"  # hidden folders: .<cell>.importing.<random>, .<cell>.old.<random>


@contextmanager
def campaign_lock(root: Path, slug: str) -> Iterator[None]:
    """One writer at a time per campaign; whatever a killed writer left is cleaned up first."""
    directory = campaign_dir(root, slug)
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / ".lock").open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            recover(directory / "cells")
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def recover(cells: Path) -> None:
    """Under the lock no import is in flight, so every hidden folder is a dead writer's: a cell
    moved aside goes back if its place is empty (a kill between the two renames), the rest goes."""
    if not cells.is_dir():
        return
    for entry in sorted(cells.iterdir()):
        parts = entry.name.split(".")
        if not entry.name.startswith(".") or len(parts) < 4 or parts[-2] not in (STAGE, ASIDE):
            continue
        home = cells / ".".join(parts[1:-2])
        if parts[-2] == ASIDE and (entry / "cell").is_dir() and not home.exists():
            os.replace(entry / "cell", home)
        shutil.rmtree(entry, ignore_errors=True)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two directories atomically (Linux renameat2 with RENAME_EXCHANGE); False where the
    system or file system cannot, and the caller falls back to two renames."""
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(b))


def swap_in(stage: Path, target: Path) -> Path:
    """Put the staged directory (a cell, an export partition) at `target`, atomically where the
    kernel can exchange two paths; returns the hidden folder now holding the old one (if any)."""
    if not target.exists():
        os.replace(stage, target)
        return stage
    if _exchange(stage, target):
        return stage
    aside = Path(tempfile.mkdtemp(prefix=f".{target.name}.{ASIDE}.", dir=target.parent))
    os.replace(target, aside / "cell")
    os.replace(stage, target)  # a kill before this line: recover() puts the old cell back
    return aside


def _copy_file(src: Path, dst: Path) -> None:
    st = src.lstat()
    if not stat.S_ISREG(st.st_mode):
        raise InputError(src, "not a regular file (device, FIFO or socket); refusing to copy it")
    if st.st_size > MAX_INPUT_BYTES:
        raise InputError(src, f"{st.st_size:,} bytes, over the {MAX_INPUT_BYTES:,}-byte limit")
    shutil.copyfile(src, dst, follow_symlinks=False)


def _copy_link(src: Path, dst: Path, root: Path) -> None:
    """A link is copied as a link, and only if it stays inside the bundle by its own text (so it
    still does in the copy): relative, and not climbing out."""
    target = os.readlink(src)
    lexical = os.path.normpath(os.path.join(os.path.dirname(os.path.relpath(src, root)), target))
    if os.path.isabs(target) or lexical == ".." or lexical.startswith(("../", "/")):
        raise InputError(src, "a link that leads outside the bundle; refusing to copy it")
    os.symlink(target, dst)


def _copy_tree(src: Path, dst: Path) -> None:
    """A bundle directory, without hidden entries (an interrupted capture's staging), following no link."""
    dst.mkdir()
    for dirpath, dirnames, filenames in os.walk(src):
        here = Path(dirpath)
        out = dst / here.relative_to(src)
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in dirnames:
            if (here / name).is_symlink():
                _copy_link(here / name, out / name, src)
            else:
                (out / name).mkdir()
        dirnames[:] = [d for d in dirnames if not (here / d).is_symlink()]
        for name in filenames:
            if name.startswith("."):
                continue
            if (here / name).is_symlink():
                _copy_link(here / name, out / name, src)
            else:
                _copy_file(here / name, out / name)


def _copy_sources(inputs: list[str], stage: Path) -> dict[Path, str]:
    """Copy every input (a bundle dir whole, or a file) under `stage`; copy -> the input it came from."""
    stage.mkdir(parents=True, exist_ok=True)
    copies = {}
    for i, raw in enumerate(inputs):
        dst = stage / f"{i:02d}-{Path(raw).name}"
        src = Path(raw).resolve()  # the input itself may be a link the user gave; links inside a bundle stay links
        if src.is_dir():
            _copy_tree(src, dst)
        else:
            _copy_file(src, dst)
        copies[dst] = raw
    return copies


def _sources(copies: dict[Path, str], stage: Path) -> list[dict[str, Any]]:
    manifests = bundles(list(copies))
    out = []
    for copy, raw in copies.items():
        files = [copy] if copy.is_file() else sorted(p for p in copy.rglob("*") if p.is_file() and not p.is_symlink())
        m = manifests.get(copy)
        out.append({
            "input": Path(raw).name, "copy": str(copy.relative_to(stage)),
            "sha256": {str(f.relative_to(stage)): sha256_file(f) for f in files},
            "manifest": None if m is None else json.loads(m.to_json()),
        })
    return out


def _original(exc: InputError, copies: dict[Path, str]) -> InputError:
    """An error about a staged copy, told about the user's own input."""
    for copy, raw in copies.items():
        if exc.path == str(copy) or exc.path.startswith(f"{copy}{os.sep}"):
            return InputError(raw + exc.path[len(str(copy)):], exc.problem)
    return exc


def _cell_document(slug: str, cell_id: str, copies: dict[Path, str], stage: Path, hw: str | None) -> str:
    try:
        items, _ = analyze(list(copies), hw=hw)
    except InputError as exc:
        raise _original(exc, copies) from exc
    kernels = [kernel_object(a) for a in items]
    for k in kernels:  # paths inside the cell, never this machine's
        k["source"] = str(Path(k["source"]).relative_to(stage))
    doc = {"schema_version": SCHEMA_VERSION, "campaign": slug, "cell_id": cell_id,
           "hw_key": items[0].hw_key, "captured_sources": _sources(copies, stage), "kernels": kernels}
    return json.dumps(doc, indent=1, allow_nan=False) + "\n"


def import_ncu(root: Path, slug: str, cell_id: str, inputs: list[str], hw: str | None = None) -> Path:
    """Analyse the inputs and (re)write the cell; the cell is replaced whole, never half-written."""
    target = cell_dir(root, slug, cell_id)
    if not inputs:
        raise KernelscopeError("give at least one bundle dir, .ncu-rep or CSV export to import")
    expand(inputs)  # refuse missing inputs before touching the campaign
    try:
        with campaign_lock(root, slug):
            ensure_config(root, slug)
            target.parent.mkdir(parents=True, exist_ok=True)
            old: Path | None = None
            try:
                with signals_held():
                    stage = old = Path(tempfile.mkdtemp(prefix=f".{cell_id}.{STAGE}.", dir=target.parent))
                copies = _copy_sources(inputs, stage / SOURCES)
                write_file(_cell_document(slug, cell_id, copies, stage, hw), stage / CELL_FILE)
                with signals_held():  # both renames, or neither
                    old = swap_in(stage, target)
            finally:
                if old is not None:
                    shutil.rmtree(old, ignore_errors=True)  # the failed stage, or the old cell
    except OSError as exc:
        raise KernelscopeError(f"{target}: cannot write the cell ({exc.strerror or exc})") from exc
    return target / CELL_FILE
