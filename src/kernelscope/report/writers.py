"""Results as documents: the JSON document (context, units, kernels, frontier) and flat CSV, both
from the one column spec (kernelscope/columns.py).

Both are written as the launches stream past (`drain`), a chunk at a time: each launch becomes its
kernel object and its JSON text (and CSV line) once, every sink writes it, and it is dropped; only
the frontier's per-kernel tally (analysis/groups.py) is kept. So 100,000 launches cost what one
does, plus their bytes.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import IO, Any, NamedTuple, Protocol

import orjson

from ..analysis.frontier import FrontierItem, ranked
from ..analysis.groups import Tally
from ..analysis.overshoot import Overshoots
from ..columns import FLAT, SCHEMA_VERSION, UNITS, flat_values, kernel_object
from ..model import Assessment
from .csv_fields import CSV_EOL, FORMULA_START, CsvWriter, inert_text
from .safe_text import has_controls, json_inert


class Chunk(NamedTuple):
    """Launches in input order as the sinks take them: each launch's kernel object encoded once, the
    CSV lines of them all when a CSV is written, and the frontier's tally of them. A worker process
    makes chunks as this one does (report/stream.py), so the formatting is spread over the workers
    and what crosses the pipe is text and a few numbers a kernel."""

    kernels: list[bytes]  # each launch's kernel object as JSON
    tally: Tally
    csv: bytes | None  # the launches' CSV lines in FLAT's columns, CRLF-ended
    over: Overshoots  # the kernels with figures past 100 % of a ceiling


def dumps(obj: Any) -> bytes:
    """JSON text, UTF-8. orjson writes these float-heavy objects ~5x faster than json's C encoder,
    each float in the shortest digits that read back exactly (its exponents differ: 1e-7 where
    json writes 1e-07); it refuses integers past 64 bits (a hostile manifest's), which json
    writes, as it writes lone surrogates, which orjson refuses. NaN never gets here: columns._in_range
    has nulled and noted it."""
    try:
        return json_inert(orjson.dumps(obj))
    except orjson.JSONEncodeError:  # ASCII, so a lone surrogate (a path's undecodable byte) is escaped, not fatal
        return json.dumps(obj, separators=(",", ":"), allow_nan=False).encode()


# A string whose text starts as a formula (csv_fields.FORMULA_START): where orjson escaped nothing, every
# quote opens or closes a string, and a closing one is followed by , or ], so a quote then one of
# those characters opens such a string (tab and CR never stand raw there: orjson escapes them). A
# pattern that starts with a literal is searched ~10x faster than one that starts with a class.
_FORMULA_FIRST = re.compile(b'"[' + re.escape("".join(FORMULA_START).encode()) + b"]")


def csv_line(values: list[Any]) -> bytes:
    """One CSV record, CRLF-ended: numbers as the JSON document writes them, None an empty field,
    every text field quoted (so empty text and None stay apart). orjson formats the whole row in
    one call (the csv module and float repr cost ~100 µs on a kernel's row); the JSON text outside
    its strings holds only numbers, null, true and false, so those tokens are rewritten there
    alone. A row where orjson escaped anything (a quote, a backslash, a C0 control in a name),
    refused a value, holds a control it writes raw (DEL, C1, a bidi override) or text that starts as
    a formula would (csv_fields.inert_text), is written a field at a time instead."""
    try:
        text = orjson.dumps(values)
    except orjson.JSONEncodeError:
        text = b"\\"
    if b"\\" in text or _FORMULA_FIRST.search(text) or (
            (not text.isascii() or b"\x7f" in text) and has_controls(text.decode("utf-8", "replace"))):
        line = ",".join(map(_field, values)) + CSV_EOL
        return line.encode("utf-8", "replace")  # a lone surrogate (a path's undecodable byte) becomes ?
    parts = text[1:-1].split(b'"')  # even: between strings; odd: a string's text
    between = b'"'.join(parts[0::2]).replace(b"null", b"").replace(b"true", b"True").replace(b"false", b"False")
    parts[0::2] = between.split(b'"')
    return b'"'.join(parts) + CSV_EOL.encode()


def _field(value: Any) -> str:
    """One field as the fast path writes it (RFC 4180: a quote inside quotes is doubled)."""
    if value is None:
        return ""
    if type(value) is str:
        return '"' + inert_text(value).replace('"', '""') + '"'
    if type(value) is float:
        number = orjson.dumps(value).decode()
        return "" if number == "null" else number  # NaN and Infinity, as the fast path leaves them
    return str(value)


def encode(items: Iterable[Assessment], rows: bool = False) -> Chunk:
    """Launches as a chunk; `rows`: with their CSV lines."""
    kernels, tally, over = [], Tally(), Overshoots()
    lines: list[bytes] | None = [] if rows else None
    for a in items:
        obj = kernel_object(a)
        kernels.append(dumps(obj))
        tally.add(a)
        over.add(a)
        if lines is not None:
            lines.append(csv_line(flat_values(obj)))
    return Chunk(kernels, tally, None if lines is None else b"".join(lines), over)


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
        self.out.write(b'],"frontier":' + dumps([f._asdict() for f in frontier]) + b"}\n")


class CsvSink:
    """Flat CSV in the column spec's FLAT columns, the same header for every run: written as the
    chunks come."""

    def __init__(self, out: IO[bytes]) -> None:
        header = io.StringIO()
        CsvWriter(header).writerow(FLAT)
        out.write(header.getvalue().encode())  # bytes: a text wrapper left unclosed would close the caller's file
        self.out = out

    def add(self, chunk: Chunk) -> None:
        assert chunk.csv is not None, "a chunk for a CSV is encoded with rows"
        self.out.write(chunk.csv)

    def close(self, frontier: Sequence[FrontierItem]) -> None:
        pass


def drain(chunks: Iterable[Chunk], sinks: Sequence[Sink], over: Overshoots | None = None) -> int:
    """Every chunk into every sink, then the frontier of them all; then the sinks close. The count
    of launches written; `over` gathers the kernels past 100 % of a ceiling."""
    tally, count = Tally(), 0
    for chunk in chunks:
        for sink in sinks:
            sink.add(chunk)
        tally.merge(chunk.tally)
        if over is not None:
            over.merge(chunk.over)
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
