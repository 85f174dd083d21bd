"""One table model, printed three ways: aligned text that fits a width, GitHub markdown for PR
comments, and CSV of the raw values. Verbs build a `Table` (what each column is, raw row values);
how it looks at 60 or 200 columns, piped or on a terminal, is decided only here.

Fitting a width: the name column shrinks first (elided in the middle, keeping the tail), then
columns are hidden from the highest `drop` rank down, and the output says which were hidden.
"""

from __future__ import annotations

import io
import re
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .csv_fields import CsvWriter
from .safe_text import clean, elide

NONE = "—"  # unmeasured or not applicable: never printed as 0
GAP = 2
NAME, ORIGIN = 24, 12  # how far a kernel name and a source label shrink before columns are hidden
COMFORT = 40  # a kernel name is cut below this only once the nice-to-have columns are hidden
SOFT_DROP = 7  # columns hidden at least this readily are nice to have: a readable name comes first
ANSI = {"red": "31", "blue": "34", "yellow": "33", "grey": "90", "green": "32", "bold": "1"}


def text(value: Any) -> str:
    return str(value)


@dataclass(frozen=True)
class Col:
    key: str  # machine name (a columns.py name where it is one): CSV header
    heading: str  # what a person reads, with the unit
    fmt: Callable[[Any], str] = text  # for a value that is not None
    right: bool = False  # numbers align right
    drop: int = 0  # hidden when too narrow, highest first; 0: always shown
    elide: int = 0  # names: shrink first (cut in the middle) down to this many characters; 0: never
    code: bool = False  # markdown: a code span (kernel names keep their underscores)
    colour: Callable[[Any], str | None] | None = None  # a key of ANSI, on a terminal only


@dataclass(frozen=True)
class Table:
    cols: tuple[Col, ...]
    rows: Sequence[Sequence[Any]]
    title: str = ""
    notes: tuple[str, ...] = field(default=())


def cell(col: Col, value: Any) -> str:
    return NONE if value is None else clean(col.fmt(value))


def _squeeze(names: list[int], natural: list[int], floor: list[int], room: int) -> dict[int, int]:
    """Widths for the elided columns in `room`: each at least its floor, the rest shared by need."""
    widths = {i: floor[i] for i in names}
    spare = room - sum(widths.values())
    need = {i: natural[i] - floor[i] for i in names}
    total = sum(need.values()) or 1
    for i in names:
        widths[i] += min(need[i], spare * need[i] // total)
    return widths


def _fit(cols: Sequence[Col], natural: list[int], width: int | None) -> tuple[list[int], dict[int, int]]:
    """(visible column indexes, width of each elided column) for `width` characters. First, nice-to-
    have columns (drop >= SOFT_DROP) go before a name is cut below COMFORT; then names shrink to
    their floor; then any droppable column goes."""
    visible = list(range(len(cols)))
    floor = [min(c.elide, n) for c, n in zip(cols, natural, strict=True)]
    comfort = [min(max(c.elide, COMFORT if c.elide >= NAME else c.elide), n) for c, n in zip(cols, natural,
                                                                                           strict=True)]
    for least, hide_from in ((comfort, SOFT_DROP), (floor, 1)):
        while True:
            names = [i for i in visible if cols[i].elide]
            used = sum(natural[i] for i in visible if not cols[i].elide) + GAP * (len(visible) - 1)
            room = None if width is None else width - used
            if room is None or room >= sum(natural[i] for i in names):
                return visible, {i: natural[i] for i in names}
            if room >= sum(least[i] for i in names):
                return visible, _squeeze(names, natural, least, room)
            hideable = [i for i in visible if cols[i].drop >= hide_from]
            if not hideable:
                break
            visible.remove(max(hideable, key=lambda i: (cols[i].drop, i)))
    assert room is not None  # nothing left to hide: names share what remains as their floors do
    total = sum(floor[i] for i in names) or 1
    return visible, {i: max(6, room * floor[i] // total) for i in names}


def wrap(text_: str, width: int | None, indent: str = "  ") -> list[str]:
    """Free text (a title, a note) as lines of at most `width` (None: one line)."""
    line = clean(text_)
    if width is None or len(line) <= width:
        return [line]
    return textwrap.wrap(line, width, subsequent_indent=indent, break_on_hyphens=False) or [line]


def render_text(table: Table, width: int | None = None, colour: bool = False) -> str:
    """Aligned columns fitted to `width` (None: no limit); ANSI colour only when `colour`."""
    cols = table.cols
    fmts = [c.fmt for c in cols]
    cells = [[NONE if v is None else clean(f(v)) for f, v in zip(fmts, row, strict=True)] for row in table.rows]
    natural = [max([len(c.heading)] + [len(r[i]) for r in cells]) for i, c in enumerate(cols)]
    visible, squeezed = _fit(cols, natural, width)
    spec = [(i, squeezed.get(i, natural[i]), cols[i].elide, cols[i].right) for i in visible]
    gap = " " * GAP

    def line(values: Sequence[str], paint: Sequence[str | None] | None = None) -> str:
        parts = []
        for i, w, cut, right in spec:
            v = elide(values[i], w) if cut and len(values[i]) > w else values[i]
            v = v.rjust(w) if right else v.ljust(w)
            style = paint[i] if paint else None
            parts.append(f"\x1b[{ANSI[style]}m{v}\x1b[0m" if style else v)
        return gap.join(parts).rstrip()

    out = wrap(table.title, width) if table.title else []
    out.append(line([c.heading for c in cols], ["bold"] * len(cols) if colour else None))
    out.append(gap.join("-" * w for _, w, _, _ in spec))
    painters = [(i, c.colour) for i, c in enumerate(cols) if c.colour] if colour else []
    for row, values in zip(table.rows, cells, strict=True):
        paint: list[str | None] | None = None
        if painters:
            paint = [None] * len(cols)
            for i, painter in painters:
                paint[i] = None if row[i] is None else painter(row[i])
        out.append(line(values, paint))
    hidden = [cols[i].heading for i in range(len(cols)) if i not in visible]
    notes = list(table.notes)
    if hidden:
        notes.append(f"not shown at {width} columns: {', '.join(hidden)} (widen, or --format markdown/csv/json)")
    return "\n".join(out + [line for n in notes for line in wrap(n, width)]) + "\n"


_MD_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`*_[]|~#"} | {"<": "&lt;"})


def md_text(s: str) -> str:
    """Text for markdown that stays text: no emphasis, link, HTML or table cell boundary from data."""
    return clean(s).translate(_MD_SPECIAL)


def md_code(s: str) -> str:
    """A code span (kernel names keep their underscores), safe inside a table cell. Its fence is one
    backtick longer than the longest run of them in the text, with a space inside either end, so
    no backtick in a name can close it (CommonMark code spans)."""
    s = clean(s).replace("|", "\\|")
    if "`" not in s:
        return f"`{s}`"
    fence = "`" * (max(map(len, re.findall("`+", s))) + 1)
    return f"{fence} {s} {fence}"


def md_cell(col: Col, value: Any) -> str:
    if value is None:
        return NONE
    return md_code(col.fmt(value)) if col.code else md_text(col.fmt(value))


def render_markdown(table: Table) -> str:
    """A GitHub-flavoured markdown table (title in bold above it, notes below)."""
    out = [f"**{md_text(table.title)}**", ""] if table.title else []
    out.append("| " + " | ".join(md_text(c.heading) for c in table.cols) + " |")
    out.append("|" + "|".join("---:" if c.right else "---" for c in table.cols) + "|")
    out += ["| " + " | ".join(md_cell(c, v) for c, v in zip(table.cols, row, strict=True)) + " |"
            for row in table.rows]
    if table.notes:
        out += [""] + [md_text(n) for n in table.notes]
    return "\n".join(out) + "\n"


def render_csv(table: Table) -> str:
    """Raw values under the machine names (numbers unformatted, empty where unmeasured)."""
    buf = io.StringIO()
    w = CsvWriter(buf)
    w.writerow([c.key for c in table.cols])
    w.writerows(["" if v is None else v for v in row] for row in table.rows)
    return buf.getvalue()
