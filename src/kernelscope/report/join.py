"""Join ncu figures with nsys kernel totals and a sampling profiler's shares, by kernel name.

Matching rules (never by timestamps), applied in order:
1. the full name with its template arguments (return type, namespaces and parameters dropped)
   equal on both sides once demangler spellings are set aside (ncu writes `(int)4`, `(bool)0`,
   `(unsigned long)2`, `<unnamed>`; c++filt-style demanglers `4`, `false`, `2ul`, `(anonymous
   namespace)`; spaces differ): one instantiation of a template matched to itself;
2. otherwise by base name: a mangled C++ name (`_Z...`) is reduced to its function's identifier, a
   demangled one to its base name (the same `short_name` the readers use); base names match when
   equal, failing that case-insensitively, failing that when one starts with the other (ncu
   truncates nothing, but profilers often do). A base name shared by several captured kernels
   (two instantiations of one template) is not matched this way: the profile's figure for it
   cannot be split between them, so both read as absent and the reason is given.

The joined profile ranks the kernels and weights the next-lever frontier: nsys totals (every
launch of the run, which ncu's few captured launches are not) when given, else the sample shares.
A profile row that matches no captured kernel is listed with its share (time ncu never looked at),
never dropped. JSON and CSV name a kernel by its full name (`kernel`), as shown in `name`.

`pair` applies the same rules between two ncu captures (`diff`'s baseline and candidate): a kernel
whose template arguments changed (a causal flash_fwd_kernel for a non-causal one) is paired by its
base name when that base name is one kernel's on each side. ncu names are whole, so there the
prefix rule, which is for profilers' truncated names, does not apply.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from ..analysis.frontier import FrontierItem
from ..analysis.verdict import verdict_roof
from ..columns import kernel_object
from ..errors import InputError
from ..files import open_input
from ..ingest import csv_pages
from ..ingest.names import kernel_name, template_name
from ..ingest.units import MalformedNumber, parse_number
from ..model import Assessment
from . import kernels
from .csv_fields import CsvWriter
from .kernels import Ranked
from .table import NAME, Col, Table

V = TypeVar("V")


def itanium_base(name: str) -> str:
    """`_ZN2at6native29vectorized_elementwise_kernelILi4E...` -> `vectorized_elementwise_kernel`."""
    m = re.match(r"_Z(N?)", name)
    if not m:
        return name
    i = m.end()
    last = name
    while i < len(name):
        while i < len(name) and name[i] in "KVrL":  # cv-qualifiers
            i += 1
        if name.startswith("St", i):
            i += 2
            continue
        d = re.match(r"\d+", name[i:])
        if not d:
            break
        n = int(d.group())
        i += len(d.group())
        last = name[i:i + n]
        i += n
        if not m.group(1):  # not nested: one identifier
            break
        if i < len(name) and name[i] in "IE":
            break
    return last


def base(name: str) -> str:
    """The name a kernel goes by (ingest/names.kernel_name: a wrapper's by the kernel inside it)."""
    return kernel_name(itanium_base(name.strip()))


_CAST = re.compile(r"\((?:(?:un)?signed )?(?:int|long long|long|short|char|bool|unsigned)\)")
_SUFFIX = re.compile(r"\b(\d+)(?:ull|ul|ll|u|l)\b", re.IGNORECASE)
_WORDS = {"true": "1", "false": "0", "(anonymousnamespace)": "anon", "<unnamed>": "anon"}


def match_key(name: str) -> str:
    """A full name with template arguments, spelled one way whatever demangler wrote it."""
    text = _SUFFIX.sub(r"\1", _CAST.sub("", template_name(name.strip())))
    text = "".join(text.split())
    for word, same in _WORDS.items():
        text = re.sub(rf"(?<![A-Za-z0-9_]){re.escape(word)}(?![A-Za-z0-9_])", same, text)
    return text


PROFILE_LIMIT = 64 << 20  # an nsys or sampling summary: one row a kernel name


def _table(path: Path) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """A profile's CSV: its header and (line, fields) rows, read as every CSV input is (opened by
    files.open_input, bounded lines, UTF-8 checked); a row of another width is an error naming its line."""
    shown = str(path)
    with open_input(path, PROFILE_LIMIT, "CSV") as fh:
        try:
            found = list(csv_pages.records(csv_pages.text(fh), shown))
        except OSError as exc:
            raise InputError(path, f"cannot read ({exc.strerror or exc})") from exc
    if len(found) < 2:
        raise InputError(path, "CSV has no rows")
    (_, header), rows = found[0], found[1:]
    for line, row in rows:
        if len(row) != len(header):
            raise InputError(path, f"line {line} has {len(row)} fields, the header has {len(header)}")
    return header, rows


def _name(path: Path, line: int, text: str) -> str:
    if not text.strip():
        raise InputError(path, f"line {line}: no kernel name")
    return text


def read_nsys(path: Path) -> dict[str, float]:
    """`nsys stats --report cuda_gpu_kern_sum --format csv`: kernel name as nsys wrote it -> total ms."""
    header, rows = _table(path)
    if "Name" not in header or "Total Time (ns)" not in header:
        raise InputError(path, 'not an nsys cuda_gpu_kern_sum CSV (needs "Name" and "Total Time (ns)")')
    name_at, time_at = header.index("Name"), header.index("Total Time (ns)")
    out: dict[str, float] = {}
    for line, row in rows:
        name, value = _name(path, line, row[name_at]), _figure(path, line, row[time_at], "Total Time (ns)")
        if value is not None:
            out[name] = out.get(name, 0.0) + value / 1e6
    return out


def read_shares(path: Path) -> dict[str, float]:
    """A profiler's sample shares: columns name (or function) and share %, name as written -> %."""
    header, rows = _table(path)
    cols = [h.lower().strip() for h in header]
    name_at = next((cols.index(c) for c in ("name", "function", "kernel") if c in cols), None)
    share_at = next((i for i, c in enumerate(cols) if c and ("share" in c or "%" in c or "percent" in c)), None)
    if name_at is None or share_at is None:
        raise InputError(path, "needs a name column and a share % column")
    out: dict[str, float] = {}
    for line, row in rows:
        name, value = _name(path, line, row[name_at]), _figure(path, line, row[share_at].rstrip("%"), header[share_at])
        if value is not None and value > 100:
            raise InputError(path, f"line {line}: {header[share_at]} is {value:g} %, over the whole")
        if value is not None:
            out[name] = out.get(name, 0.0) + value
    if sum(out.values()) > 100.5:  # rounding of shares written to 0.1 %
        raise InputError(path, f"the shares add up to {sum(out.values()):.1f} %, over the whole")
    return out


def _figure(path: Path, line: int, text: str, column: str) -> float | None:
    """A profile's figure: unmeasured when blank or out of range; a malformed or negative one is a
    damaged file (a total time or a share is never negative), refused with its line."""
    try:
        value = parse_number(text)
    except MalformedNumber as exc:
        raise InputError(path, f"line {line}: {column}: {exc}") from None
    if value is not None and value < 0:
        raise InputError(path, f"line {line}: {column} is {value:g}, and it is never negative")
    return value


def lookup(table: Mapping[str, V], name: str, truncated: bool = True) -> V | None:
    """A base name's entry by rule 2: equal, else case-insensitively, else (where a side may have
    `truncated` its names) the one entry that starts with the other."""
    if name in table:
        return table[name]
    lowered = {k.lower(): v for k, v in table.items()}
    if name.lower() in lowered:
        return lowered[name.lower()]
    hits = [v for k, v in table.items() if k and (k.startswith(name) or name.startswith(k))] if truncated else []
    return hits[0] if len(hits) == 1 else None


def distinct(names: Iterable[str]) -> dict[str, set[str]]:
    """Base name -> the distinct kernels (match keys) of `names` under it; a base name with more
    than one names no one kernel, and rule 2 leaves it alone."""
    out: dict[str, set[str]] = {}
    for name in names:
        out.setdefault(base(name), set()).add(match_key(name))
    return out


Pair = tuple[int | None, int | None, str | None]  # (left index, right index, the rule that paired them)


def pair(left: Sequence[str], right: Sequence[str]) -> list[Pair]:
    """Two captures' kernels, by full name, paired by the rules above: rule "name" (1) or "base
    name" (2, never by prefix); the n-th kernel of a name with the n-th. In `left`'s order, then
    what only `right` has, in its order."""
    pending: dict[str, list[int]] = {}
    for j, name in enumerate(right):
        pending.setdefault(match_key(name), []).append(j)
    firsts = [(i, q.pop(0) if (q := pending.get(match_key(name))) else None) for i, name in enumerate(left)]
    rest = sorted(j for q in pending.values() for j in q)
    ours, theirs = distinct(left), distinct(right)
    by_base: dict[str, list[int]] = {}
    for j in rest:
        if len(theirs[base(right[j])]) == 1:
            by_base.setdefault(base(right[j]), []).append(j)
    out: list[Pair] = []
    for i, hit in firsts:
        how = None if hit is None else "name"
        if hit is None and len(ours[base(left[i])]) == 1 and (q := lookup(by_base, base(left[i]), truncated=False)):
            hit, how = q.pop(0), "base name"
        out.append((i, hit, how))
    taken = {hit for _, hit, _ in out}
    return out + [(None, j, None) for j in rest if j not in taken]


class Profile:
    """One whole-run profile's figures by name, looked up by the matching rules above. It keeps which
    of its rows a lookup took, so the rows that name no captured kernel are listed, not dropped."""

    def __init__(self, figures: Mapping[str, float]) -> None:
        self.figures = dict(figures)
        self.total = sum(self.figures.values())
        self.full: dict[str, list[str]] = {}  # match key -> the profile's names
        self.by_base: dict[str, list[str]] = {}
        for name in self.figures:
            self.full.setdefault(match_key(name), []).append(name)
            self.by_base.setdefault(base(name), []).append(name)
        self.taken: set[str] = set()

    def find(self, full: str, shared_base: bool) -> float | None:
        names = self.full.get(match_key(full))
        if names is None and not shared_base:
            names = lookup(self.by_base, base(full))
        if names is None:
            return None
        self.taken.update(names)
        return sum(self.figures[n] for n in names)

    def share(self, value: float | None) -> float | None:
        """`value` as a % of the profile's total."""
        return None if value is None or not self.total else 100.0 * value / self.total

    def left(self) -> dict[str, float]:
        """The rows no lookup took."""
        return {n: v for n, v in self.figures.items() if n not in self.taken}


@dataclass(frozen=True)
class JoinRow:
    """A captured kernel (its launches together) and the joined profile's figures for it; None: the
    profile does not name it."""

    row: Ranked  # ranked by the joined profile's share when one is given: its `#` in every output
    source: str  # the input it came from, as named on the command line
    samples_pct: float | None
    nsys_total_ms: float | None
    nsys_pct: float | None  # of the nsys file's summed kernel time

    @property
    def rank(self) -> int:
        return self.row.rank

    @property
    def kernel(self) -> str:
        """The full name: the kernel's identity (two instantiations of a template are two kernels)."""
        return self.row.group.name_full or self.row.group.name

    @property
    def name(self) -> str:
        """As the table shows it (analysis.groups.display_names)."""
        return self.row.name


@dataclass(frozen=True)
class Unmatched:
    """A profile row that names no captured kernel: time or samples ncu did not look at."""

    kernel: str  # as the profile names it
    samples_pct: float | None
    nsys_total_ms: float | None
    nsys_pct: float | None

    @property
    def share(self) -> float:
        return self.nsys_pct if self.nsys_pct is not None else self.samples_pct or 0.0


@dataclass(frozen=True)
class Joined:
    rows: list[JoinRow]
    unmatched: list[Unmatched]  # largest share first
    frontier: list[tuple[int, FrontierItem]]  # weighted by the joined profile when one matched
    notes: tuple[str, ...]  # kernels a profile could not be matched to and why; provisional bounds
    ranked_by: str  # "nsys totals", "sample shares" or "ncu time"
    profiles: tuple[str, ...]  # which were joined: "nsys", "samples"


def join(items: Sequence[Assessment], nsys: Mapping[str, float], shares: Mapping[str, float],
         labels: Mapping[str, str] | None = None) -> Joined:
    """One row a kernel (its launches together), whatever report it came from, ranked by the joined
    profile's share (nsys totals when given, else the sample shares; kernels it does not name
    after, by ncu time), and the profile rows that matched no kernel."""
    ranked = kernels.ranked(items)
    fulls = distinct(r.group.name_full for r in ranked)
    by_nsys, by_shares = Profile(nsys), Profile(shares)
    found: list[tuple[Ranked, float | None, float | None]] = []
    for r in ranked:
        shared = len(fulls[base(r.group.name_full)]) > 1
        found.append((r, by_shares.find(r.group.name_full, shared), by_nsys.find(r.group.name_full, shared)))

    def weight(f: tuple[Ranked, float | None, float | None]) -> float | None:
        return f[2] if nsys else f[1]

    order = sorted(found, key=lambda f: (weight(f) is None, -(weight(f) or 0.0), f[0].rank))
    labels = labels or {}
    rows = [JoinRow(replace(r, rank=i), labels.get(r.group.source, r.group.source), pct, ms, by_nsys.share(ms))
            for i, (r, pct, ms) in enumerate(order, 1)]
    ranks = [j.row for j in rows]
    notes = []
    for j in rows:
        sharing = len(fulls[base(j.row.group.name_full)])
        if sharing > 1 and (nsys or shares) and j.nsys_total_ms is None and j.samples_pct is None:
            notes.append(f"#{j.rank} {j.name}: {sharing} captured kernels share the base name "
                         f"{base(j.row.group.name_full)!r} and the profile names none of them in full: its "
                         "figure is not split")
    weights = {(j.row.group.source, j.row.group.name_full): w for j, f in zip(rows, order, strict=True)
               if (w := weight(f)) is not None}
    basis = "nsys totals" if nsys else "sample shares" if shares else "ncu time"
    left = [Unmatched(n, None, v, by_nsys.share(v)) for n, v in by_nsys.left().items()]
    left += [Unmatched(n, v, None, None) for n, v in by_shares.left().items()]
    left.sort(key=lambda u: -u.share)
    return Joined(rows, left, kernels.kernel_frontier(ranks, weights or None, basis),
                  (*notes, *kernels.bound_notes(ranks)), basis,
                  tuple(p for p, given in (("nsys", nsys), ("samples", shares)) if given))


# the profile's columns: key, heading, format, which profile fills it
PROFILE_COLS: tuple[tuple[str, str, str, str], ...] = (
    ("samples_pct", "samples %", ".1f", "samples"), ("nsys_total_ms", "nsys ms", ".3f", "nsys"),
    ("nsys_pct", "nsys %", ".1f", "nsys"))
UNMATCHED_SHOWN = 10
RANKED_BY = {"nsys totals": "the nsys totals (every launch of the run)", "sample shares": "the sample shares",
             "ncu time": "ncu time (no profile joined)"}


def _profile_cols(joined: Joined) -> list[tuple[str, Col]]:
    """The joined profiles' columns; the share that ranks is always shown, the others go when narrow."""
    ranking = "nsys_pct" if "nsys" in joined.profiles else "samples_pct"
    return [(key, Col(key, heading, kernels.number(spec), right=True, drop=0 if key == ranking else 4))
            for key, heading, spec, profile in PROFILE_COLS if profile in joined.profiles]


def table(joined: Joined, title: str = "") -> Table:
    """analyze's kernel table (the same columns under the same names, the first lever included) with
    the profile's figures after ncu's time, ranked as `join` ranks."""
    by_rank = {j.rank: j for j in joined.rows}
    extra = [(col, lambda r, key=key: getattr(by_rank[r.rank], key)) for key, col in _profile_cols(joined)]
    labels = {j.row.group.source: j.source for j in joined.rows}
    return kernels.table([j.row for j in joined.rows], labels, notes=joined.notes, extra=extra,
                         title=title or f"{len(joined.rows)} kernel(s), ranked by {RANKED_BY[joined.ranked_by]}")


def unmatched_table(joined: Joined) -> Table | None:
    """The profile rows that name no captured kernel, largest first (the first UNMATCHED_SHOWN; JSON
    and CSV hold every one)."""
    if not joined.unmatched:
        return None
    shown = joined.unmatched[:UNMATCHED_SHOWN]
    cols = [Col("kernel", "profile row", elide=NAME, code=True), *(c for _, c in _profile_cols(joined))]
    keys = [c.key for c in cols]
    rest = joined.unmatched[len(shown):]
    notes = (f"… {len(rest)} more ({_together(rest)}): every one in --format json or csv",) if rest else ()
    return Table(tuple(cols), [[getattr(u, k) for k in keys] for u in shown],
                 f"Not in the ncu capture: {len(joined.unmatched)} profile row(s) that match no captured kernel "
                 f"({_together(joined.unmatched)})", notes)


def _together(rows: Sequence[Unmatched]) -> str:
    """What rows of the profile hold together, in each profile's terms."""
    parts = []
    nsys = [u.nsys_pct for u in rows if u.nsys_pct is not None]
    samples = [u.samples_pct for u in rows if u.samples_pct is not None]
    if nsys:
        parts.append(f"{sum(nsys):.1f} % of nsys time")
    if samples:
        parts.append(f"{sum(samples):.1f} % of samples")
    return ", ".join(parts) or "no share given"


# a kernel's row in JSON and CSV: the names of analyze's columns (kernelscope/columns.py) and the table's
JOINED = ("pct_sol", "ceiling_key", *(name for name, _ in kernels.TABLE_FIGURES), "dram_throughput_pct",
          "sm_busy_pct")  # the kernel figures a joined row carries
FIELDS = ("rank", "kernel", "name", "source", "launches", "duration_ns", "time_share_pct", "samples_pct",
          "nsys_total_ms", "nsys_pct", "bound", "provisional", "roof", *JOINED, "pct_of_achievable", "verdict",
          "next_lever")


def _fields(j: JoinRow, total_ns: float) -> dict[str, Any]:
    """`duration_ns` is the kernel's captured launches summed, as in the table."""
    r, a = j.row, j.row.lead
    obj = kernel_object(a)  # its figures in range, as analyze writes them
    roof = verdict_roof(a)
    return {"rank": r.rank, "kernel": j.kernel, "name": j.name, "source": j.source, "launches": len(r.group.launches),
            "duration_ns": r.total_ns, "time_share_pct": None if r.total_ns is None else 100.0 * r.total_ns / total_ns,
            "samples_pct": j.samples_pct, "nsys_total_ms": j.nsys_total_ms, "nsys_pct": j.nsys_pct,
            "bound": a.bound, "provisional": a.provisional, "roof": None if roof is None else kernels.roof_name(roof),
            **{name: obj[name] for name in JOINED}, "pct_of_achievable": obj["pct_of_achievable"],
            "verdict": a.verdict, "next_lever": a.next_levers[0].rule if a.next_levers else None}


def document(joined: Joined) -> dict[str, Any]:
    """`join --format json`: the kernels, the profile rows that match none, the frontier as
    weighted, and the notes."""
    total = kernels.total_time([j.row for j in joined.rows])
    return {"ranked_by": joined.ranked_by, "kernels": [_fields(j, total) for j in joined.rows],
            "unmatched": [asdict(u) for u in joined.unmatched],
            "frontier": [{"rank": rank, **f._asdict()} for rank, f in joined.frontier],
            "notes": list(joined.notes)}


ACHIEVABLE = tuple(f"pct_of_achievable.{key}" for key, _ in kernels.ACHIEVABLE)


def to_csv(joined: Joined) -> str:
    """`join --format csv`: one row a kernel (JSON's fields, pct_of_achievable as its two columns),
    then one a profile row that matches no kernel (`matched` False, ncu's fields empty)."""
    header = [f for f in FIELDS if f != "pct_of_achievable"]
    header[header.index("verdict"):header.index("verdict")] = ACHIEVABLE
    total = kernels.total_time([j.row for j in joined.rows])
    rows = []
    for j in joined.rows:
        doc = _fields(j, total)
        ach = doc.pop("pct_of_achievable") or {}
        doc |= {name: ach.get(name.split(".", 1)[1]) for name in ACHIEVABLE}
        rows.append([*(doc[h] for h in header), True])
    rows += [[*(getattr(u, h, None) for h in header), False] for u in joined.unmatched]
    buf = io.StringIO()
    out = CsvWriter(buf)
    out.writerow([*header, "matched"])
    out.writerows(["" if v is None else v for v in row] for row in rows)
    return buf.getvalue()
