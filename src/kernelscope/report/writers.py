"""Results as documents: the JSON document (context, units, kernels, frontier) and flat CSV, both
from the one column spec (kernelscope/columns.py).

Both are written as the launches stream past (`drain`): each launch becomes its kernel object once,
every sink writes it, and it is dropped; only the frontier's per-kernel tally (analysis/groups.py)
and, for CSV, one length a row are kept. So 100,000 launches cost what one does, plus their bytes.
"""

from __future__ import annotations

import csv
import io
import json
import tempfile
from array import array
from collections.abc import Iterable, Mapping, Sequence
from typing import IO, Any, Protocol

from ..analysis.frontier import ranked
from ..analysis.groups import Tally
from ..columns import SCHEMA_VERSION, UNITS, flatten, kernel_object
from ..model import Assessment


class Sink(Protocol):
    def add(self, obj: dict[str, Any], a: Assessment) -> None: ...

    def close(self) -> None: ...


class JsonSink:
    """The JSON document, byte for byte what json.dumps of it whole would give (its default
    separators), written a kernel at a time. Compact: an indent makes json use its pure-Python
    encoder, ~15x slower (pipe to jq to read)."""

    def __init__(self, out: IO[str], context: Mapping[str, Any]) -> None:
        head = json.dumps({"schema_version": SCHEMA_VERSION, "context": dict(context), "units": UNITS},
                          allow_nan=False)
        out.write(head[:-1] + ', "kernels": [')
        self.out, self.tally, self.count = out, Tally(), 0

    def add(self, obj: dict[str, Any], a: Assessment) -> None:
        self.out.write((", " if self.count else "") + json.dumps(obj, allow_nan=False))
        self.tally.add(a)
        self.count += 1

    def close(self) -> None:
        front = [vars(f).copy() for f in ranked(self.tally.summaries())]  # plain fields: no deep copy
        self.out.write('], "frontier": ' + json.dumps(front, allow_nan=False) + "}\n")


class CsvSink:
    """Flat CSV: the header is every column any row has, in order of first appearance, so rows
    wait in a temp file until the last one is known; a row that lacks a later
    column gets an empty field for it, as csv.DictWriter's would."""

    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self.columns: dict[str, int] = {}
        self.spool = tempfile.TemporaryFile(mode="w+", encoding="utf-8", newline="")
        self.writer = csv.writer(self.spool, lineterminator="\n")
        self.rows = array("q")  # each row's characters and width, in turn: a quoted field may hold a newline

    def add(self, obj: dict[str, Any], a: Assessment) -> None:
        row = flatten(obj)
        for name in row:
            self.columns.setdefault(name, len(self.columns))
        fields: list[Any] = [""] * len(self.columns)
        for name, value in row.items():
            fields[self.columns[name]] = value
        written = self.writer.writerow(fields)  # the file's write(): characters, as read() counts them
        self.rows.extend((written, len(fields)))

    def close(self) -> None:
        csv.writer(self.out, lineterminator="\n").writerow(list(self.columns))
        width = len(self.columns)
        self.spool.seek(0)
        for i in range(0, len(self.rows), 2):
            line = self.spool.read(self.rows[i])
            self.out.write(line[:-1] + "," * (width - self.rows[i + 1]) + "\n")
        self.spool.close()


def drain(items: Iterable[Assessment], sinks: Sequence[Sink]) -> int:
    """Every launch into every sink, one kernel object each; then the sinks close. The count read."""
    count = 0
    for a in items:
        obj = kernel_object(a)
        for sink in sinks:
            sink.add(obj, a)
        count += 1
    for sink in sinks:
        sink.close()
    return count


def to_json_and_csv(items: Sequence[Assessment], context: Mapping[str, Any]) -> tuple[str, str]:
    """kernels.json and kernels.csv as text, each kernel object built once for both."""
    j, c = io.StringIO(), io.StringIO()
    drain(items, [JsonSink(j, context), CsvSink(c)])
    return j.getvalue(), c.getvalue()
