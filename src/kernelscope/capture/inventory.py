"""`kernelscope kernels -- PROGRAM`: the kernels a program runs, so a user picks --kernel filters from
what really runs rather than from guesses.

- By default one run under ncu with a filter that matches nothing: ncu profiles nothing (its only
  cost is intercepting the launches) and lists every kernel that ran by its function name.
- `--timed N`: ncu profiles the first N launches with one metric, gpu__time_duration.sum (one pass:
  no replay), and the report is grouped by full name: launches and total GPU time. Each profiled
  launch costs ncu a serialised result: on vLLM offline (compiled, start-up included) a 6,000-launch
  cap ran past 560 s on the H200, so keep N to the steps that matter.

Each kernel comes with the `regex:` that selects it alone among those listed (ncu's demangled names).
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import KernelscopeError
from ..ingest import read_file
from ..ingest.names import kernel_name
from ..ncu.argv import LIST_ONLY_FILTER
from .diagnose import available_kernels
from .transport import LocalProcess, Progress

LIST_METRIC = "gpu__time_duration.sum"


@dataclass(frozen=True)
class Listed:
    name: str  # as kernelscope shows it
    name_full: str  # ncu's demangled name (the timed listing), or its function name as ncu lists it
    launches: int | None  # None: not counted (the untimed listing)
    total_ns: float | None  # summed gpu__time_duration over the launches that have it
    select: str  # the --kernel value that selects this kernel (and what else it would match, see `shared`)
    shared: int  # how many listed kernels `select` matches (1: only this one)


def inventory_argv(ncu: str, target: Sequence[str], report: str, launches: int) -> list[str]:
    """Every launch (no filter) with one duration metric, clocks as found, child processes too."""
    return [ncu, "--clock-control", "none", "--target-processes", "all", "--metrics", LIST_METRIC,
            "--launch-count", str(launches), "-f", "-o", report.removesuffix(".ncu-rep"), *target]


_SPECIAL = re.compile(r"([.^$*+?()\[\]{}|\\])")


def _escaped(text: str) -> str:
    """Only regex metacharacters escaped: ncu's ECMAScript regex reads `\\<` differently from Python's."""
    return _SPECIAL.sub(lambda m: "\\" + m.group(1), text)


def selectors(fulls: Sequence[str]) -> dict[str, tuple[str, int]]:
    """Each full name's --kernel value: `regex:NAME` by the name it is shown as when that selects it
    alone among the listed kernels, else `regex:^FULL$`; with how many listed kernels it matches."""
    shown = {f: kernel_name(f) for f in fulls}
    out = {}
    for full in fulls:
        pattern = _escaped(shown[full])
        hits = sum(1 for f in fulls if re.search(pattern, f))
        if hits > 1:
            pattern = f"^{_escaped(full)}$"
            hits = 1
        out[full] = (f"regex:{pattern}", hits)
    return out


def group(report: Path) -> list[Listed]:
    """The report's launches by full name, most total time first."""
    launches: dict[str, list[float | None]] = {}
    for raw in read_file(report):
        launches.setdefault(raw.name_full, []).append(raw.metrics.get(LIST_METRIC))
    chosen = selectors(list(launches))
    rows = []
    for full, times in launches.items():
        known = [t for t in times if t is not None]
        select, shared = chosen[full]
        rows.append(Listed(kernel_name(full), full, len(times), sum(known) if known else None, select, shared))
    return sorted(rows, key=lambda r: -(r.total_ns or 0.0))


def names_argv(ncu: str, target: Sequence[str]) -> list[str]:
    """One run with a filter matching nothing: ncu lists the kernels that ran, profiles none."""
    return [ncu, "--clock-control", "none", "--target-processes", "all", "--kernel-name", LIST_ONLY_FILTER, *target]


def names(ncu: str, target: Sequence[str], env: Mapping[str, str], timeout: float,
          progress: Progress) -> list[Listed]:
    """The untimed listing: every kernel's name as ncu lists it, and its selector."""
    progress(f"listing every kernel {target[0]} runs (ncu intercepts its launches, profiles none)")
    code, output = LocalProcess().run(names_argv(ncu, target), timeout, env)
    found = list(dict.fromkeys(available_kernels(output)))
    if not found:
        tail = " | ".join(output.strip().splitlines()[-4:])
        raise KernelscopeError(f"ncu listed no kernel of {target[0]} (exit {code}): {tail}")
    chosen = selectors(found)
    return [Listed(kernel_name(n), n, None, None, *chosen[n]) for n in found]


def run(ncu: str, target: Sequence[str], env: Mapping[str, str], launches: int, timeout: float,
        progress: Progress) -> tuple[list[Listed], int, str]:
    """Run the program once under the timed pass: (kernels, launches profiled, ncu's last words)."""
    with tempfile.TemporaryDirectory(prefix="kernelscope-kernels-") as tmp:
        report = Path(tmp) / "kernels.ncu-rep"
        argv = inventory_argv(ncu, target, str(report), launches)
        progress(f"listing every kernel {target[0]} runs (one metric a launch, at most {launches:,} launches)")
        outcome = LocalProcess().capture(argv, str(report), report, env, timeout, progress)
        if not outcome.complete:
            tail = " | ".join(outcome.output.strip().splitlines()[-4:])
            raise KernelscopeError(f"ncu listed no kernel of {target[0]} (exit {outcome.exit_code}): {tail}")
        rows = group(report)
    return rows, sum(r.launches or 0 for r in rows), outcome.output
