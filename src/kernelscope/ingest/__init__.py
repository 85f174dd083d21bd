"""Ingest: any mix of `.ncu-rep` files, ncu CSV exports, gzip of either, and bundle directories
-> one list of RawKernel. Formats are recognised by content."""

from __future__ import annotations

import gzip
import json
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from ..errors import InputError
from ..model import RawKernel
from . import csv_pages, ncu_rep
from .detect import check_ncu_rep_framing, read_head, sniff

REPORT_GLOBS = ("*.ncu-rep", "*.ncu-rep.gz")


def _read_bytes(data: bytes, path: Path, shown: str) -> Iterator[RawKernel]:
    kind = sniff(data[:4096])
    if kind == "ncu-rep":
        check_ncu_rep_framing(data, shown)
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / "report.ncu-rep"
            copy.write_bytes(data)
            yield from list(ncu_rep.read(copy, shown))
    elif kind == "csv":
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise InputError(shown, "CSV is not UTF-8 text") from exc
        yield from csv_pages.read(path, text, shown)
    else:
        raise InputError(shown, "neither an .ncu-rep report nor an ncu CSV export")


def read_file(path: Path) -> list[RawKernel]:
    """All launches in one file; an empty file, or one that yields no launch, is an error."""
    shown = str(path)
    try:
        head = read_head(path)
    except OSError as exc:
        raise InputError(shown, f"cannot read ({exc.strerror})") from exc
    if not head:
        raise InputError(shown, "empty file")
    kind = sniff(head)
    if kind == "ncu-rep":
        data = path.read_bytes()
        check_ncu_rep_framing(data, shown)
        kernels = list(ncu_rep.read(path, shown))
    elif kind == "gzip":
        try:
            data = gzip.decompress(path.read_bytes())
        except (OSError, EOFError) as exc:
            raise InputError(shown, f"corrupt gzip ({exc})") from exc
        kernels = list(_read_bytes(data, path, shown))
    else:
        kernels = list(_read_bytes(path.read_bytes(), path, shown))
    if not kernels:
        raise InputError(shown, "holds no profiled kernel launches")
    return kernels


def bundle_reports(directory: Path) -> list[Path]:
    """Reports in a directory: the bundle manifest's list when there is one, else every report
    under it. CSV exports beside a report are copies of it and are not read twice."""
    manifest = directory / "manifest.json"
    if manifest.is_file():
        try:
            listed = json.loads(manifest.read_text())["reports"]
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(manifest, f"not a kernelscope bundle manifest ({exc})") from exc
        return [directory / p for p in listed]
    found = sorted({p for g in REPORT_GLOBS for p in directory.rglob(g)})
    if not found:
        raise InputError(directory, "directory holds no .ncu-rep reports")
    return found


def bundle_manifest(directory: Path) -> dict | None:
    """A capture bundle's manifest (its full context), or None for a plain directory."""
    manifest = directory / "manifest.json"
    return json.loads(manifest.read_text()) if manifest.is_file() else None


def expand(paths: Iterable[str | Path]) -> list[Path]:
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            out += bundle_reports(path)
        elif path.exists():
            out.append(path)
        else:
            raise InputError(path, "no such file or directory")
    return out


def read_inputs(paths: Sequence[str | Path]) -> list[RawKernel]:
    """Every launch of every input, in input order."""
    kernels: list[RawKernel] = []
    for path in expand(paths):
        kernels += read_file(path)
    return kernels
