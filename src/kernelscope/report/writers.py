"""Results as documents: the JSON document (context, units, kernels, frontier) and flat CSV, both
from the one column spec (kernelscope/columns.py).

Both are written as the launches stream past (`drain`), a chunk at a time: each launch becomes its
kernel object and its JSON text once, every sink writes it, and it is dropped; only the frontier's
per-kernel tally (analysis/groups.py) and, for CSV, one length a row are kept. So 100,000 launches
cost what one does, plus their bytes.
"""

from __future__ import annotations

import csv
import io
import json
import tempfile
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any, Protocol

import orjson

from ..analysis.frontier import FrontierItem, ranked
from ..analysis.groups import Tally
from ..columns import SCHEMA_VERSION, UNITS, flatten, kernel_object
from ..model import Assessment
from .table import CSV_EOL, csv_writer

Row = tuple[tuple[str, ...], str]  # a launch's flat column names (columns.flatten) and its CSV line in that order


@dataclass(frozen=True)
class Chunk:
    """Launches in input order as the sinks take them: each launch's kernel object encoded once, its
    CSV line when a CSV is written, and the frontier's tally of them. A worker process makes chunks
    as this one does (report/stream.py), so the formatting is spread over the workers and what
    crosses the pipe is text and a few numbers a kernel."""

    kernels: list[bytes]  # each launch's kernel object as JSON
    tally: Tally
    rows: list[Row] | None = None  # column names shared between rows of one layout (one object each)


def dumps(obj: Any) -> bytes:
    """JSON text, UTF-8. orjson writes these float-heavy objects ~5x faster than json's C encoder,
    each float in the shortest digits that read back exactly (its exponents differ: 1e-7 where
    json writes 1e-07); it refuses integers past 64 bits (a hostile manifest's), which json
    writes. NaN never gets here: columns._finite has nulled and noted it."""
    try:
        return orjson.dumps(obj)
    except orjson.JSONEncodeError:
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def encode(items: Iterable[Assessment], rows: bool = False) -> Chunk:
    """Launches as a chunk; `rows`: with their CSV lines."""
    kernels, tally = [], Tally()
    lines: list[Row] | None = [] if rows else None
    layouts: dict[tuple[str, ...], tuple[str, ...]] = {}
    text = io.StringIO()
    writer = csv_writer(text)
    for a in items:
        obj = kernel_object(a)
        kernels.append(dumps(obj))
        tally.add(a)
        if lines is not None:
            flat = flatten(obj)
            names = tuple(flat)
            text.seek(0)
            text.truncate()
            writer.writerow(flat.values())
            lines.append((layouts.setdefault(names, names), text.getvalue()))
    return Chunk(kernels, tally, lines)


class Sink(Protocol):
    def add(self, chunk: Chunk) -> None: ...

    def close(self, frontier: Sequence[FrontierItem]) -> None: ...


class JsonSink:
    """The JSON document, written a chunk at a time: what dumps() of it whole would give. Compact;
    pipe to jq to read."""

    def __init__(self, out: IO[bytes], context: Mapping[str, Any]) -> None:
        head = dumps({"schema_version": SCHEMA_VERSION, "context": dict(context), "units": UNITS})
        out.write(head[:-1] + b',"kernels":[')
        self.out, self.count = out, 0

    def add(self, chunk: Chunk) -> None:
        if chunk.kernels:
            self.out.write((b"," if self.count else b"") + b",".join(chunk.kernels))
            self.count += len(chunk.kernels)

    def close(self, frontier: Sequence[FrontierItem]) -> None:
        self.out.write(b'],"frontier":' + dumps([vars(f) for f in frontier]) + b"}\n")


class CsvSink:
    """Flat CSV: the header is every column any row has, in order of first appearance, so rows
    wait in a temp file until the last one is known; a row that lacks a later column gets an
    empty field for it, as csv.DictWriter's would. A chunk's line whose columns fall in that order
    (the common case: every launch of a kernel has the same) is written as it came; any other is
    laid out again."""

    def __init__(self, out: IO[bytes]) -> None:
        self.out = out  # bytes, written by hand: a text wrapper left unclosed would close the caller's file
        self.columns: dict[str, int] = {}
        self.spool = tempfile.TemporaryFile(mode="w+", encoding="utf-8", newline="")
        self.writer = csv_writer(self.spool)
        self.rows = array("q")  # each row's characters and width, in turn: a quoted field may hold a newline

    def add(self, chunk: Chunk) -> None:
        assert chunk.rows is not None, "a chunk for a CSV is encoded with rows"
        fits: dict[int, bool] = {}  # by the id of a layout, shared by the chunk's rows of that layout
        for names, line in chunk.rows:
            if id(names) not in fits:
                for name in names:
                    self.columns.setdefault(name, len(self.columns))
                fits[id(names)] = all(self.columns[name] == i for i, name in enumerate(names))
            if fits[id(names)]:
                self.rows.extend((self.spool.write(line), len(names)))
                continue
            fields: list[str] = [""] * len(self.columns)
            parsed = next(csv.reader(io.StringIO(line, newline="")))  # text back to text: exact
            for name, value in zip(names, parsed, strict=True):
                fields[self.columns[name]] = value
            self.rows.extend((self.writer.writerow(fields), len(fields)))

    def close(self, frontier: Sequence[FrontierItem]) -> None:
        header = io.StringIO()
        csv_writer(header).writerow(list(self.columns))
        self.out.write(header.getvalue().encode())
        width = len(self.columns)
        self.spool.seek(0)
        for i in range(0, len(self.rows), 2):
            line = self.spool.read(self.rows[i])
            self.out.write((line[:-len(CSV_EOL)] + "," * (width - self.rows[i + 1]) + CSV_EOL).encode())
        self.spool.close()


def drain(chunks: Iterable[Chunk], sinks: Sequence[Sink]) -> int:
    """Every chunk into every sink, then the frontier of them all; then the sinks close. The count
    of launches written."""
    tally, count = Tally(), 0
    for chunk in chunks:
        for sink in sinks:
            sink.add(chunk)
        tally.merge(chunk.tally)
        count += len(chunk.kernels)
    front = ranked(tally.summaries())
    for sink in sinks:
        sink.close(front)
    return count


def to_json_and_csv(items: Sequence[Assessment], context: Mapping[str, Any]) -> tuple[bytes, bytes]:
    """kernels.json and kernels.csv, each kernel object built and encoded once for both."""
    j, c = io.BytesIO(), io.BytesIO()
    drain([encode(items, rows=True)], [JsonSink(j, context), CsvSink(c)])
    return j.getvalue(), c.getvalue()
