"""Join ncu figures with nsys kernel totals and a sampling profiler's shares, by kernel name.

Matching rules (never by timestamps), applied in order to each side's names:
1. a mangled C++ name (`_Z...`) is reduced to its function's base identifier;
2. a demangled name is reduced to its base name (no return type, namespaces, template arguments or
   parameters) — the same `short_name` the readers use;
3. names then match when equal; failing that, case-insensitively; failing that, when one base name
   starts with the other (ncu truncates nothing, but profilers often do).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..columns import value
from ..errors import InputError
from ..ingest.names import short_name
from ..ingest.units import parse_number
from ..model import Assessment
from . import kernels
from .table import NAME, ORIGIN, Col, Table


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
    return short_name(itanium_base(name.strip()))


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
    pct_sol: float | None
    verdict: str


def _rows(path: Path) -> list[dict[str, str]]:
    try:
        text = path.read_text()
    except OSError as exc:
        raise InputError(path, f"cannot read ({exc.strerror})") from exc
    rows = list(csv.DictReader(io.StringIO(text)))
    if not rows:
        raise InputError(path, "CSV has no rows")
    return rows


def read_nsys(path: Path) -> dict[str, float]:
    """`nsys stats --report cuda_gpu_kern_sum --format csv`: base name -> total ms."""
    out: dict[str, float] = {}
    for row in _rows(path):
        if "Name" not in row or "Total Time (ns)" not in row:
            raise InputError(path, 'not an nsys cuda_gpu_kern_sum CSV (needs "Name" and "Total Time (ns)")')
        value = parse_number(row["Total Time (ns)"])
        if value is not None:
            key = base(row["Name"])
            out[key] = out.get(key, 0.0) + value / 1e6
    return out


def read_shares(path: Path) -> dict[str, float]:
    """A profiler's sample shares: columns name (or function) and share %, base name -> %."""
    out: dict[str, float] = {}
    for row in _rows(path):
        cols = {k.lower().strip(): v for k, v in row.items() if k}
        name = cols.get("name") or cols.get("function") or cols.get("kernel")
        share = next((v for k, v in cols.items() if "share" in k or "%" in k or "percent" in k), None)
        if name is None or share is None:
            raise InputError(path, "needs a name column and a share % column")
        value = parse_number(share.rstrip("%"))
        if value is not None:
            out[base(name)] = out.get(base(name), 0.0) + value
    return out


def _lookup(table: dict[str, float], name: str) -> float | None:
    if name in table:
        return table[name]
    lowered = {k.lower(): v for k, v in table.items()}
    if name.lower() in lowered:
        return lowered[name.lower()]
    hits = [v for k, v in table.items() if k and (k.startswith(name) or name.startswith(k))]
    return hits[0] if len(hits) == 1 else None


def join(items: Sequence[Assessment], nsys: dict[str, float], shares: dict[str, float],
         labels: Mapping[str, str] | None = None) -> list[JoinRow]:
    """One row a kernel (its launches together, ranked by time), whatever report it came from."""
    rows = []
    for r in kernels.ranked(items):
        a = r.lead
        name = base(a.record.name_full or a.record.name)
        rows.append(JoinRow(r.rank, a.record.name, (labels or {}).get(a.record.source, a.record.source),
                            None if r.total_ns is None else r.total_ns / 1e3, _lookup(shares, name),
                            _lookup(nsys, name), a.record.dram_throughput_pct, a.record.sm_busy_pct,
                            value(a, "pct_sol"), a.verdict))
    return rows


def table(rows: Sequence[JoinRow], title: str = "") -> Table:
    def f(spec: str) -> Callable[[Any], str]:
        return lambda v: format(v, spec)

    cols = [Col("rank", "#", right=True), Col("kernel", "kernel", elide=NAME, code=True)]
    several = len({r.source for r in rows}) > 1
    if several:
        cols.append(Col("source", "source", elide=ORIGIN))
    cols += [Col("ncu_time_us", "ncu µs", f(".1f"), right=True, drop=4),
             Col("samples_pct", "samples %", f(".1f"), right=True),
             Col("nsys_total_ms", "nsys total ms", f(".3f"), right=True),
             Col("dram_pct", "DRAM %", f(".0f"), right=True, drop=3),
             Col("sm_pct", "SM %", f(".0f"), right=True, drop=2),
             Col("pct_sol", "SoL %", f(".0f"), right=True), Col("verdict", "verdict", drop=1)]
    keys = [c.key for c in cols]
    return Table(tuple(cols), [[getattr(r, k) for k in keys] for r in rows], title)
