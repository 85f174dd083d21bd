"""Ingest: any mix of `.ncu-rep` files, ncu CSV exports, gzip of either, and bundle directories
-> one list of RawKernel. Formats are recognised by content."""

from __future__ import annotations

import tempfile
import zlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from .. import manifest as bundle_manifest_file
from ..errors import InputError
from ..files import MAX_INPUT_BYTES, read_bytes
from ..manifest import BundleManifest
from ..model import RawKernel
from . import csv_pages, ncu_rep
from .detect import check_ncu_rep_framing, sniff

REPORT_GLOBS = ("*.ncu-rep", "*.ncu-rep.gz")


def gunzip(data: bytes, shown: str, limit: int = MAX_INPUT_BYTES) -> bytes:
    """Decompress, refusing more than `limit` bytes of output (a gzip bomb stops there)."""
    out = bytearray()
    pos = 0
    try:
        while pos < len(data):
            member = zlib.decompressobj(wbits=31)
            chunk = member.decompress(data[pos:], limit + 1 - len(out))
            out += chunk
            if len(out) > limit or member.unconsumed_tail:
                raise InputError(shown, f"gzip expands past the {limit:,}-byte limit")
            if not member.eof:
                raise InputError(shown, "corrupt gzip (truncated stream)")
            pos = len(data) - len(member.unused_data)
            if not member.unused_data.strip(b"\x00"):
                break
    except zlib.error as exc:
        raise InputError(shown, f"corrupt gzip ({exc})") from exc
    return bytes(out)


def _read_data(data: bytes, path: Path, shown: str) -> list[RawKernel]:
    kind = sniff(data[:4096])
    if kind == "ncu-rep":
        check_ncu_rep_framing(data, shown)
        with tempfile.TemporaryDirectory() as tmp:  # ncu_report reads files, not bytes
            copy = Path(tmp) / "report.ncu-rep"
            copy.write_bytes(data)
            return list(ncu_rep.read(copy, shown))
    if kind == "csv":
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise InputError(shown, f"CSV is not UTF-8 text (byte {exc.start})") from exc
        return list(csv_pages.read(path, text, shown))
    if kind == "gzip":
        raise InputError(shown, "gzip inside gzip")
    raise InputError(shown, "neither an .ncu-rep report nor an ncu CSV export")


def read_file(path: Path) -> list[RawKernel]:
    """All launches in one file; an empty file, or one that yields no launch, is an error."""
    shown = str(path)
    data = read_bytes(path, what="report")
    if not data:
        raise InputError(shown, "empty file")
    if sniff(data[:4096]) == "ncu-rep":  # read in place: no copy of a large report
        check_ncu_rep_framing(data, shown)
        kernels = list(ncu_rep.read(path, shown))
    else:
        if sniff(data[:4096]) == "gzip":
            data = gunzip(data, shown)
        kernels = _read_data(data, path, shown)
    if not kernels:
        raise InputError(shown, "holds no profiled kernel launches")
    return kernels


def _inside(root: Path, rel: str, manifest: Path) -> Path:
    """A path a manifest lists, which must stay inside its bundle (no absolute path, no '..', no link out)."""
    candidate = Path(rel)
    if candidate.is_absolute() or ".." in candidate.parts:
        raise InputError(manifest, f"lists {rel!r}, outside the bundle")
    full = root / candidate
    if not full.resolve().is_relative_to(root.resolve()):
        raise InputError(manifest, f"lists {rel!r}, which leads outside the bundle")
    return full


def bundle_manifest(directory: Path) -> BundleManifest | None:
    """A capture bundle's manifest (its full context), or None for a plain directory of reports."""
    path = directory / bundle_manifest_file.FILE
    return bundle_manifest_file.read(path) if path.is_file() else None


def bundle_reports(directory: Path) -> list[Path]:
    """Reports in a directory: the bundle manifest's list when there is one, else every report
    under it (hidden staging folders of an interrupted capture are not reports). CSV exports beside
    a report are copies of it and are not read twice."""
    manifest = bundle_manifest(directory)
    if manifest is not None:
        where = directory / bundle_manifest_file.FILE
        if not manifest.reports:
            raise InputError(where, "bundle lists no reports (every capture in it failed)")
        return [_inside(directory, p, where) for p in manifest.reports]
    found = sorted({p for g in REPORT_GLOBS for p in directory.rglob(g)
                    if not any(part.startswith(".") for part in p.relative_to(directory).parts)})
    if not found:
        raise InputError(directory, "directory holds no .ncu-rep reports")
    return found


def expand(paths: Iterable[str | Path]) -> list[Path]:
    out: list[Path] = []
    for raw in paths:
        if isinstance(raw, str) and not raw.strip():
            raise InputError(repr(raw), "empty path")
        path = Path(raw)
        if path.is_dir():
            out += bundle_reports(path)
        elif path.exists():
            out.append(path)
        else:
            raise InputError(path, "no such file or directory")
    return out


def iter_inputs(paths: Sequence[str | Path]) -> Iterator[RawKernel]:
    for path in expand(paths):
        yield from read_file(path)


def read_inputs(paths: Sequence[str | Path]) -> list[RawKernel]:
    """Every launch of every input, in input order."""
    return list(iter_inputs(paths))
