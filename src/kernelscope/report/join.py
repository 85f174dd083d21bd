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

`pair` applies the same rules between two ncu captures (`diff`'s baseline and candidate): a kernel
whose template arguments changed (a causal flash_fwd_kernel for a non-causal one) is paired by its
base name when that base name is one kernel's on each side. ncu names are whole, so there the
prefix rule, which is for profilers' truncated names, does not apply.

The joined profile also weights the next-lever frontier: nsys totals (every launch of the run,
which ncu's few captured launches are not) when given, else the sample shares.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

from ..analysis.frontier import FrontierItem
from ..analysis.groups import Key
from ..analysis.verdict import roof_pct, verdict_roof
from ..errors import InputError
from ..files import open_input
from ..ingest import csv_pages
from ..ingest.names import kernel_name, template_name
from ..ingest.units import parse_number
from ..model import Assessment
from . import kernels
from .table import NAME, ORIGIN, Col, Table

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


@dataclass(frozen=True)
class JoinRow:
    rank: int
    kernel: str
    source: str
    ncu_time_us: float | None  # the profiled launches' summed time
    samples_pct: float | None
    nsys_total_ms: float | None
    dram_pct: float | None
    sm_pct: float | None
    roof: str | None  # the roof the verdict stands on (analysis.verdict.verdict_roof)
    roof_pct: float | None  # % of it, at the kernel's clock
    verdict: str


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
        name, value = _name(path, line, row[name_at]), parse_number(row[time_at])
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
        name, value = _name(path, line, row[name_at]), parse_number(row[share_at].rstrip("%"))
        if value is not None:
            out[name] = out.get(name, 0.0) + value
    return out


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
    """One whole-run profile's figures by name, looked up by the matching rules above."""

    def __init__(self, figures: Mapping[str, float]) -> None:
        self.full: dict[str, float] = {}
        self.by_base: dict[str, float] = {}
        for name, v in figures.items():
            key, short = match_key(name), base(name)
            self.full[key] = self.full.get(key, 0.0) + v
            self.by_base[short] = self.by_base.get(short, 0.0) + v

    def find(self, full: str, shared_base: bool) -> float | None:
        hit = self.full.get(match_key(full))
        if hit is not None or shared_base:
            return hit
        return lookup(self.by_base, base(full))


@dataclass(frozen=True)
class Joined:
    rows: list[JoinRow]
    frontier: list[tuple[int, FrontierItem]]  # weighted by the joined profile when one matched
    notes: tuple[str, ...]  # kernels a profile could not be matched to, and why


def join(items: Sequence[Assessment], nsys: Mapping[str, float], shares: Mapping[str, float],
         labels: Mapping[str, str] | None = None) -> Joined:
    """One row a kernel (its launches together, ranked by time), whatever report it came from."""
    ranked = kernels.ranked(items)
    fulls = distinct(r.group.name_full for r in ranked)
    by_nsys, by_shares = Profile(nsys), Profile(shares)
    rows, notes = [], []
    weights: dict[Key, float] = {}
    for r in ranked:
        a, full = r.lead, r.group.name_full
        sharing = len(fulls[base(full)])
        ms, pct = by_nsys.find(full, sharing > 1), by_shares.find(full, sharing > 1)
        if sharing > 1 and (nsys or shares) and ms is None and pct is None:
            notes.append(f"#{r.rank} {r.name}: {sharing} captured kernels share the base name "
                         f"{base(full)!r} and the profile names none of them in full: its figure is not split")
        weight = ms if nsys else pct
        if weight is not None:
            weights[(r.group.source, full)] = weight
        roof = verdict_roof(a)
        rows.append(JoinRow(r.rank, r.name, (labels or {}).get(a.record.source, a.record.source),
                            None if r.total_ns is None else r.total_ns / 1e3, pct, ms,
                            a.record.dram_throughput_pct, a.record.sm_busy_pct,
                            None if roof is None else kernels.roof_name(roof), roof_pct(a),
                            a.verdict))
    basis = "nsys totals" if nsys else "sample shares"
    front = kernels.kernel_frontier(ranked, weights or None, basis)
    return Joined(rows, front, tuple(notes))


def table(joined: Joined, title: str = "") -> Table:
    rows = joined.rows
    cols = [Col("rank", "#", right=True), Col("kernel", "kernel", elide=NAME, code=True)]
    several = len({r.source for r in rows}) > 1
    if several:
        cols.append(Col("source", "source", elide=ORIGIN))
    cols += [Col("ncu_time_us", "ncu µs", kernels.number(".1f"), right=True, drop=4),
             Col("samples_pct", "samples %", kernels.number(".1f"), right=True),
             Col("nsys_total_ms", "nsys total ms", kernels.number(".3f"), right=True),
             Col("dram_pct", "DRAM %", kernels.number(".0f"), right=True, drop=3),
             Col("sm_pct", "SM %", kernels.number(".0f"), right=True, drop=2),
             Col("roof", "roof", drop=5), Col("roof_pct", "roof %", kernels.number(".0f"), right=True),
             Col("verdict", "verdict", drop=1)]
    keys = [c.key for c in cols]
    return Table(tuple(cols), [[getattr(r, k) for k in keys] for r in rows], title, joined.notes)


def document(joined: Joined) -> dict[str, Any]:
    """`join --format json`: the rows, the frontier as weighted, and the notes."""
    return {"kernels": [asdict(r) for r in joined.rows],
            "frontier": [{"rank": rank, **asdict(f)} for rank, f in joined.frontier],
            "notes": list(joined.notes)}
