"""CSV fields as every CSV output writes them (a table's, the streamed kernels.csv, diff's, join's):
inert to a terminal and a spreadsheet, lines ended CRLF. Apart from table.py, which the streamed
documents do not need (its dataclasses and textwrap cost every analyze start-up ~2 ms)."""

from __future__ import annotations

import csv
from collections.abc import Iterable
from typing import IO, Any

from .safe_text import clean

CSV_EOL = "\r\n"  # RFC 4180's; with "\n" the csv module left a \r in a name unquoted, and readers split the row


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def inert_text(text: str) -> str:
    """Text as a terminal and a spreadsheet should see it in a CSV field: escape sequences and
    controls removed as everywhere (text.clean; tab, LF and CR are kept, quoted), and text a
    spreadsheet would run as a formula (a crafted kernel name such as =HYPERLINK(...), first
    character = + - @ tab or CR, before or after the cleaning) gets a leading apostrophe, as
    OWASP's CSV-injection advice has it."""
    inert = clean(text, layout=True)
    return "'" + inert if text.startswith(FORMULA_START) or inert.startswith(FORMULA_START) else inert


def inert(value: Any) -> Any:
    """A CSV field: text through inert_text; anything else, numbers included, as it is."""
    return inert_text(value) if type(value) is str else value


class CsvWriter:
    """csv.writer's rows, each field through inert(), quoting any field that holds a quote, comma,
    \r or \n, lines ended CRLF."""

    def __init__(self, out: IO[str]) -> None:
        self.writer = csv.writer(out, lineterminator=CSV_EOL)

    def writerow(self, row: Iterable[Any]) -> None:
        self.writer.writerow([inert(v) for v in row])

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.writerow(row)
