"""Ingest: any mix of `.ncu-rep` files, ncu CSV exports, gzip of either, and bundle directories
-> RawKernels, one launch at a time. Formats are recognised by content.

Hostile files end as one InputError: every file is opened by files.open_input (regular files
only, bounded, checked before it is read), gzip is expanded in chunks to a private temp file and
stops at MAX_INPUT_BYTES, CSV is streamed a bounded line at a time, and a bundle's paths and links
stay inside the bundle."""

from __future__ import annotations

import atexit
import itertools
import os
import shutil
import tempfile
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from .. import redact, serving
from ..errors import InputError, KernelscopeError
from ..files import MAX_INPUT_BYTES, open_input
from ..model import RawKernel
from ..ncu import cmdline, metric_sets
from ..report_manifest import GpuFacts, NcuFacts, ReportManifest
from . import csv_pages, ncu_rep, session
from .detect import sniff

if TYPE_CHECKING:  # the bundle manifest loads with the first directory read: a report's analysis needs none of it
    from ..manifest import BundleManifest

NO_LAUNCHES = "holds no profiled kernel launches"
REPORT_GLOBS = ("*.ncu-rep", "*.ncu-rep.gz")
MAX_REPORTS = 1024  # reports one bundle may list: a capture's kernels, one report each
CHUNK = 1 << 20
Inputs = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]


def gunzip_file(src: Path, dst: Path, shown: str, limit: int = MAX_INPUT_BYTES) -> None:
    """Expand a gzip file (several members, zero padding allowed) into `dst`, in chunks, refusing
    more than `limit` bytes of output: a gzip bomb stops there, a corrupt stream is one error."""
    written = 0
    member = zlib.decompressobj(wbits=31)
    ended = in_member = padding = False  # after the last member only zero bytes may follow (padding)
    try:
        with open_input(src, what="report") as fin, dst.open("wb") as fout:
            for data in iter(lambda: fin.read(CHUNK), b""):
                if padding and data.strip(b"\x00"):
                    raise InputError(shown, "corrupt gzip (data after the end of the stream)")
                while data and not padding:
                    out = member.decompress(data, CHUNK)
                    in_member = True
                    written += len(out)
                    if written > limit:
                        raise InputError(shown, f"gzip expands past the {limit:,}-byte limit")
                    fout.write(out)
                    data = member.unconsumed_tail
                    if member.eof:
                        ended, in_member, data = True, False, member.unused_data
                        member = zlib.decompressobj(wbits=31)
                        padding = not data.strip(b"\x00")
        if in_member or not ended:
            raise InputError(shown, "corrupt gzip (truncated stream)")
    except zlib.error as exc:
        raise InputError(shown, f"corrupt gzip ({exc})") from exc
    except OSError as exc:
        raise InputError(shown, f"cannot expand gzip ({exc.strerror or exc})") from exc


def _head(path: Path) -> bytes:
    with open_input(path, what="report") as fh:
        return fh.read(4096)


def _read_plain(path: Path, shown: str, kind: str, sized: ncu_rep.Sized | None) -> Iterator[RawKernel]:
    if kind == "ncu-rep":
        yield from ncu_rep.read(path, shown, sized=sized)
    elif kind == "csv":
        with open_input(path, what="report") as fh:
            yield from csv_pages.read(csv_pages.text(fh), shown)
    elif kind == "gzip":
        raise InputError(shown, "gzip inside gzip")
    else:
        raise InputError(shown, "neither an .ncu-rep report nor an ncu CSV export")


# a gzipped report's expansion, by the .gz's identity: kept while the process runs, with the report
# ncu_report loaded from it and never frees (ncu_rep._OPENED), so reading the .gz again expands and
# loads nothing more; the folder goes at exit
_EXPANDED: dict[ncu_rep.Identity, Path] = {}
_KEPT: list[Path] = []  # the folder of the kept expansions, made on first use
_NUMBER = itertools.count()  # their names


def _keep(inner: Path) -> Path:
    if not _KEPT:
        _KEPT.append(Path(tempfile.mkdtemp(prefix="kernelscope-")))
        atexit.register(shutil.rmtree, _KEPT[0], ignore_errors=True)
    kept = _KEPT[0] / f"{next(_NUMBER)}.ncu-rep"
    inner.replace(kept)
    return kept


@contextmanager
def plain(path: Path, shown: str) -> Iterator[tuple[Path, str]]:
    """The file as its readers take it, and its kind (detect.sniff): a gzip expanded into a private
    temp file for as long as it is read (ncu_report reads files, not bytes), or, a report, for as
    long as the process runs (_EXPANDED). An empty file, or an empty one inside gzip, is an error."""
    head = _head(path)
    if not head:
        raise InputError(shown, "empty file")
    if sniff(head) != "gzip":
        yield path, sniff(head)
        return
    key = ncu_rep.identity(path)
    kept = _EXPANDED.get(key) if key is not None else None
    if kept is not None and kept.exists():
        yield kept, "ncu-rep"
        return
    with tempfile.TemporaryDirectory(prefix="kernelscope-") as tmp:
        inner = Path(tmp) / "report"
        gunzip_file(path, inner, shown)
        first = _head(inner)
        if not first:
            raise InputError(shown, "empty file inside gzip")
        kind = sniff(first)
        if kind == "ncu-rep" and key is not None:
            inner = _EXPANDED[key] = _keep(inner)
        yield inner, kind


def iter_file(path: Path, sized: ncu_rep.Sized | None = None) -> Iterator[RawKernel]:
    """Every launch in one file, streamed; an empty file, or one that yields no launch, is an error.
    `sized`: told how many launches a report holds before the first is read (progress). A
    multiplexed bundle (expand gives its directory) is read whole: its launches merged."""
    shown = str(path)
    count = 0
    try:
        if path.is_dir():
            from .. import manifest as bundle_manifest_file
            from . import multiplexed  # here: only a multiplexed bundle needs it (and statistics, ~3 ms a start-up)

            manifest = bundle_manifest(path)
            assert manifest is not None and manifest.multiplexed, path  # expand gives no other directory
            yield from multiplexed.read(manifest, path / bundle_manifest_file.FILE, _reports_of(path, manifest),
                                        iter_file)
            return
        with plain(path, shown) as (file, kind):
            for raw in _read_plain(file, shown, kind, sized):
                count += 1
                yield raw
    except OSError as exc:
        raise InputError(shown, f"cannot read ({exc.strerror or exc})") from exc
    if not count:
        raise InputError(shown, NO_LAUNCHES)


def report_manifest(path: Path) -> ReportManifest | None:
    """A bare `.ncu-rep`'s own context (report_manifest.ReportManifest), or None for a CSV export, which
    records none. The report's session details (ingest/session.py), its first launch's sections,
    metrics and clocks (ncu_rep.first_launch), ncu's command line split into ncu's options and the
    program (ncu/cmdline.py), every command line redacted."""
    shown = str(path)
    try:
        with plain(path, shown) as (file, kind):
            if kind != "ncu-rep":
                return None
            recorded = session.read(ncu_rep.framing(file, shown))
            launch = ncu_rep.first_launch(file, shown)
    except OSError as exc:
        raise InputError(shown, f"cannot read ({exc.strerror or exc})") from exc
    command = cmdline.parse(recorded.command_line or "")
    ncu = NcuFacts(next(iter(command.argv), ""), recorded.ncu_version) if recorded.ncu_version else None
    return ReportManifest(
        report=shown, ncu=ncu, gpu=GpuFacts(launch.device, None, recorded.cuda_version),
        metric_set=metric_sets.recognise(launch.sections, launch.metrics), sections=launch.sections,
        ncu_command=tuple(redact.argv(list(command.argv))), target=tuple(redact.argv(list(command.target))),
        processes=recorded.processes, host=recorded.host, clock_control=command.value("--clock-control"),
        clocks_hz=launch.clocks_hz, created_at=recorded.created_at,
        engine_evidence=serving.recognise(launch.kernels, None, recorded.processes))


def read_file(path: Path) -> list[RawKernel]:
    return list(iter_file(path))


def inside(root: Path, rel: str, shown: Path) -> Path:
    """`rel` under `root`, which must stay inside it: no absolute path, no '..', no link that leads
    out (a link loop stays where it is and is refused when it is opened)."""
    if "\x00" in rel or not rel.strip():
        raise InputError(shown, f"lists {rel!r}: not a usable path (empty, or a NUL byte)")
    candidate = Path(rel)
    if candidate.is_absolute() or ".." in candidate.parts:
        raise InputError(shown, f"lists {rel!r}, outside the bundle")
    full = root / candidate
    if not Path(os.path.realpath(full)).is_relative_to(os.path.realpath(root)):
        raise InputError(shown, f"{rel!r} leads outside the bundle (a link)")
    return full


def bundle_manifest(directory: Path) -> BundleManifest | None:
    """A capture bundle's manifest (its full context), or None for a plain directory of reports."""
    from .. import manifest as bundle_manifest_file  # here: a report's analysis reads none (~5 ms at start-up)

    path = directory / bundle_manifest_file.FILE
    if not path.is_file() and not path.is_symlink():
        return None
    return bundle_manifest_file.read(inside(directory, bundle_manifest_file.FILE, path))


def bundle_reports(directory: Path) -> list[Path]:
    """Reports in a directory: the bundle manifest's list when there is one, else every report
    under it (hidden staging folders of an interrupted capture are not reports). CSV exports beside
    a report are copies of it and are not read twice. Nothing outside the directory is read."""
    return _reports_of(directory, bundle_manifest(directory))


def _reports_of(directory: Path, manifest: BundleManifest | None) -> list[Path]:
    """bundle_reports, for a directory whose manifest (or None) is read already."""
    if manifest is not None:
        from .. import manifest as bundle_manifest_file

        where = directory / bundle_manifest_file.FILE
        if not manifest.reports:
            raise InputError(where, "bundle lists no reports (every capture in it failed)")
        if len(manifest.reports) > MAX_REPORTS:
            raise InputError(where, f"bundle lists {len(manifest.reports):,} reports, over the {MAX_REPORTS:,} "
                                    "a bundle may hold (one a capture)")
        seen: dict[str, str] = {}
        for rel in manifest.reports:
            key = os.path.realpath(inside(directory, rel, where))
            if key in seen:
                first = seen[key]
                raise InputError(where, f"lists the report {first!r} twice" + ("" if first == rel else f" ({rel!r})"))
            seen[key] = rel
        return [_as_captured(inside(directory, p, where), manifest.artifacts_sha256.get(p)) for p in manifest.reports]
    found = sorted({p for g in REPORT_GLOBS for p in directory.rglob(g)
                    if not any(part.startswith(".") for part in p.relative_to(directory).parts)})
    if not found:
        raise InputError(directory, "directory holds no .ncu-rep reports")
    return [inside(directory, str(p.relative_to(directory)), p) for p in found]


def _as_captured(path: Path, sha256: str | None) -> Path:
    """A bundle's report, refused when it is not the file the capture hashed into the manifest: a
    copy cut between two of its launches reads as a whole report of fewer (ingest/detect.py), and
    only this record tells it apart."""
    if sha256 is not None:
        from ..manifest import sha256_file

        try:
            found = sha256_file(path)
        except OSError as exc:
            raise InputError(path, f"cannot read ({exc.strerror or exc})") from exc
        if found != sha256:
            raise InputError(path, "is not the report its bundle's manifest recorded at capture (its sha256 "
                                   "differs): a copy cut short, or a file changed since")
    return path


def input_paths(paths: Inputs) -> list[Path]:
    """One input or several, as paths (a bare string or Path is one input, never its characters).
    Anything else, and an empty name (which would mean the working directory), is refused."""
    items = [paths] if isinstance(paths, (str, os.PathLike)) else paths
    if not isinstance(items, Sequence) or isinstance(items, (bytes, bytearray)):
        raise KernelscopeError(f"inputs: expected a path or a list of paths, got {type(paths).__name__}")
    out = []
    for raw in items:
        try:  # a PathLike's __fspath__ is the caller's code: it may return anything, or raise
            text = os.fspath(raw) if isinstance(raw, (str, os.PathLike)) else None
        except (TypeError, ValueError):
            text = None
        if not isinstance(text, str):
            raise KernelscopeError(f"inputs: expected a path, got {type(raw).__name__} {raw!r:.80}")
        if not text.strip() or "\x00" in text:
            raise InputError(repr(text), "not a usable path (empty, or a NUL byte)")
        out.append(Path(text))
    if not out:
        raise KernelscopeError("inputs: no path given")
    return out


def expand(paths: Inputs) -> list[Path]:
    """Files to read: each input file, and the reports of each input directory. A file reached twice
    (given twice, or as a report and the folder holding it) is refused: its launches would count twice."""
    out: list[Path] = []
    seen: dict[str, Path] = {}
    for path in input_paths(paths):
        try:
            if path.is_dir():
                manifest = bundle_manifest(path)
                # a multiplexed bundle is read whole (iter_file): its runs' launches are merged
                found = _reports_of(path, manifest) if manifest is None or not manifest.multiplexed else [path]
            elif path.exists() or path.is_symlink():
                found = [path]
            else:
                raise InputError(path, "no such file or directory")
            for file in found:
                key = os.path.realpath(file)
                if key in seen:
                    given = "given twice" if seen[key] == path else f"reached as {seen[key]} and as {path}"
                    raise InputError(file, f"is {given}: its launches would count twice; give each report once")
                seen[key] = path if path.is_dir() else file
            out += found
        except OSError as exc:
            raise InputError(path, f"cannot read ({exc.strerror or exc})") from exc
    return out


def iter_inputs(paths: Inputs) -> Iterator[RawKernel]:
    """Every launch of every input, in input order, one at a time."""
    for path in expand(paths):
        yield from iter_file(path)
