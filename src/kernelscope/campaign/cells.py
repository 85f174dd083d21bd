"""A campaign cell: the ncu figures of one capture, as ncu_kernels.json (kernel objects of the one
column spec), importable from a bundle, a .ncu-rep or CSV exports. Import copies the sources into
the cell and is idempotent: the same inputs give the same bytes.

Writes are crash- and concurrency-safe: one lock per campaign (an flock, released by the kernel
when its holder dies), the new cell staged in a hidden folder and swapped in whole. On Linux the
swap is one atomic renameat2(RENAME_EXCHANGE), so a kill at any moment leaves the old cell or the
new one under the cell's name, never neither; elsewhere the old cell is moved aside first and put
back by the next writer if a kill came between the two renames. Every writer, on taking the lock,
first removes what killed writers left (hidden stages, cells moved aside), and readers skip
hidden folders. Recovery moves only real folders, never through a link, and import checks the
size of everything it will copy before it copies a byte.
"""

from __future__ import annotations

import ctypes
import errno
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
from ..errors import InputError, KernelscopeError, signals_held
from ..files import MAX_INPUT_BYTES, copy_input, open_input, write_file
from ..ingest import expand
from ..manifest import sha256_file
from .store import CELL_FILE, CELL_LIMIT, campaign_dir, cell_dir, ensure_config, in_campaign

SOURCES = "sources"
MAX_IMPORT_BYTES = 2 * MAX_INPUT_BYTES  # what one import may copy: a largest report and its exports
STAGE, ASIDE = "importing", "old"  # hidden folders: .<cell>.importing.<random>, .<cell>.old.<random>


@contextmanager
def campaign_lock(root: Path, slug: str) -> Iterator[None]:
    """One writer at a time per campaign; whatever a killed writer left is cleaned up first."""
    campaign_dir(root, slug).mkdir(parents=True, exist_ok=True)
    lock = in_campaign(root, slug, ".lock")
    fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        recover(in_campaign(root, slug, "cells"))
        yield
    finally:
        os.close(fd)  # releases the lock


def recover(cells: Path) -> None:
    """Under the lock no import is in flight, so every hidden folder is a dead writer's: a cell
    moved aside goes back if its place is empty (a kill between the two renames), the rest goes.
    Only real folders count (a writer makes nothing else): a link named like one is left alone,
    so nothing from outside the campaign is ever moved into it or removed."""
    if not cells.is_dir():
        return
    for entry in sorted(cells.iterdir()):
        parts = entry.name.split(".")
        if not entry.name.startswith(".") or len(parts) < 4 or parts[-2] not in (STAGE, ASIDE) \
                or not _real_dir(entry):
            continue
        home = cells / ".".join(parts[1:-2])
        if parts[-2] == ASIDE and _real_dir(entry / "cell") and not os.path.lexists(home):
            os.replace(entry / "cell", home)
        shutil.rmtree(entry, ignore_errors=True)


def _real_dir(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


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


def _copy_link(src: Path, dst: Path, root: Path) -> None:
    """A link is copied as a link, and only if it stays inside the bundle by its own text (so it
    still does in the copy): relative, and not climbing out."""
    target = os.readlink(src)
    lexical = os.path.normpath(os.path.join(os.path.dirname(os.path.relpath(src, root)), target))
    if os.path.isabs(target) or lexical == ".." or lexical.startswith(("../", "/")):
        raise InputError(src, "a link that leads outside the bundle; refusing to copy it")
    os.symlink(target, dst)


def _listing(src: Path) -> list[tuple[Path, str]]:
    """What copying a bundle directory makes: (path under it, 'dir' | 'link' | 'file'), parents
    first, without hidden entries (an interrupted capture's staging), following no link."""
    out: list[tuple[Path, str]] = []
    for dirpath, dirnames, filenames in os.walk(src):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in dirnames:
            out.append((here / name, "link" if (here / name).is_symlink() else "dir"))
        dirnames[:] = [d for d in dirnames if not (here / d).is_symlink()]
        out += [(here / name, "link" if (here / name).is_symlink() else "file")
                for name in sorted(filenames) if not name.startswith(".")]
    return out


def _copy_sources(inputs: list[str], stage: Path) -> dict[Path, str]:
    """Copy every input (a bundle dir whole, or a file) under `stage`; copy -> the input it came
    from. Every file is checked (regular, within the size limits, no holes) and the total sized
    before the first byte is copied."""
    stage.mkdir(parents=True, exist_ok=True)
    plan: list[tuple[Path, Path, Path, str]] = []  # (source, copy, its input's root, kind)
    copies = {}
    for i, raw in enumerate(inputs):
        dst = stage / f"{i:02d}-{Path(raw).name}"
        src = Path(os.path.realpath(raw))  # the input itself may be a link the user gave; links inside a bundle stay
        if src.is_dir():
            plan += [(src, dst, src, "dir")] + [(p, dst / p.relative_to(src), src, kind) for p, kind in _listing(src)]
        else:
            plan.append((src, dst, src, "input"))
        copies[dst] = raw
    total = 0
    for src, _, _, kind in plan:
        if kind in ("file", "input"):
            with open_input(src, follow=kind == "input") as fh:
                total += os.fstat(fh.fileno()).st_size
    if total > MAX_IMPORT_BYTES:
        raise InputError(inputs[0] if len(inputs) == 1 else f"{len(inputs)} inputs",
                         f"{total:,} bytes to copy into the cell, over the {MAX_IMPORT_BYTES:,} one import may copy")
    for src, dst, root, kind in plan:
        if kind == "dir":
            dst.mkdir()
        elif kind == "link":
            _copy_link(src, dst, root)
        else:
            copy_input(src, dst, follow=kind == "input")
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
    text = json.dumps(doc, indent=1, allow_nan=False) + "\n"
    if len(text) > CELL_LIMIT:  # what the cell's readers would refuse (the text is ASCII: json escapes the rest)
        raise KernelscopeError(f"cell {cell_id}: {len(kernels):,} launches make {len(text):,} bytes, over the "
                               f"{CELL_LIMIT:,} a cell may hold; import fewer launches (or analyze the report itself)")
    return text


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
