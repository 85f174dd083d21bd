"""The launches of the inputs as encoded chunks (writers.py), in input order, for the streamed
documents. A launch costs ~250 µs of Python from CSV row to JSON text, spread thin over reading,
deriving, judging and encoding, so a large raw CSV export or `.ncu-rep` report is cut into parts
(ingest/parts.py) and worker processes read, judge and encode a part each, while this process
writes the chunks in order. Every other input (small, gzip, a details page), and any with one job,
is read here.

The workers (pool.py) cannot hang the run: one that dies is one error. Ctrl-C, SIGTERM and SIGHUP
reach this process, which ends the pool; a worker whose parent was killed outright exits on its
own. At most two parts a worker are in flight, so memory stays a few parts whatever the size.
An API caller passing jobs > 1 needs the `if __name__ == "__main__":` guard multiprocessing's
spawn asks of every program.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, closing
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING

from ..analysis.pipeline import Judge
from ..errors import InputError, KernelscopeError, signals_interrupt
from ..ingest import NO_LAUNCHES, Inputs
from ..ingest.csv_pages import NotSimple
from ..model import RawKernel
from .progress import Steps, counted, files, metered_file, quiet
from .writers import Chunk, encode

if TYPE_CHECKING:  # multiprocessing loads with the first pool: a run with one job starts without it (~10 ms)
    from ..ingest.parts import Split
    from .pool import Pool

PART_BYTES = 8 << 20  # ~650 launches of a full raw export: a worker's unit of work
MAX_JOBS = 16  # the writing process spends ~13 µs a launch: past ~16 workers (~260 µs a launch) it is the limit
CHUNK = 256  # launches a chunk when read here


def default_jobs(cgroup: Path = Path("/sys/fs/cgroup"), membership: Path = Path("/proc/self/cgroup")) -> int:
    """Workers by default: the CPUs this process may run on, within its cgroup's CPU quota (a pod
    limited to 2 CPUs on a 128-core node gets 2), and at most MAX_JOBS."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    try:
        quota = cpu_quota(cgroup, membership.read_text())
    except OSError:
        quota = None
    return max(1, min(cpus, quota or cpus, MAX_JOBS))


def cpu_quota(cgroup: Path, membership: str) -> int | None:
    """The tightest CPU quota, rounded up, on this process's cgroup and every cgroup above it (a
    systemd slice's, a pod's), as /proc/self/cgroup (`membership`) names them: v2's cpu.max, v1's
    cpu.cfs_quota_us over cpu.cfs_period_us. None when none is set or none can be read. In a
    container with its own cgroup namespace its cgroup is the mount's root."""
    quotas = []
    for line in membership.splitlines():
        _, controllers, rel = (line.split(":", 2) + ["", ""])[:3]
        if controllers and "cpu" not in controllers.split(","):
            continue
        base = cgroup if not controllers else cgroup / "cpu"
        where = base / rel.strip("/")
        for level in (where, *where.parents):
            quotas.append(_quota(level, v2=not controllers))
            if level == base:
                break
    found = [q for q in quotas if q is not None]
    return min(found) if found else None


def _quota(level: Path, v2: bool) -> int | None:
    try:
        if v2:
            quota, period = (level / "cpu.max").read_text().split()[:2]
        else:
            quota, period = ((level / f).read_text().strip() for f in ("cpu.cfs_quota_us", "cpu.cfs_period_us"))
        return -(-int(quota) // int(period)) if quota not in ("max", "-1") and int(period) > 0 else None
    except (OSError, ValueError):
        return None


def chunks(paths: Inputs, judge: Judge, jobs: int = 1, rows: bool = False, progress: Steps = quiet) -> Iterator[Chunk]:
    """Every input's launches, judged and encoded (`rows`: with their CSV lines), in input order;
    `jobs` processes at most; `progress` told each file's launches (or parts) done of its total."""
    with ExitStack() as stack:
        workers: Pool | None = None
        for path, what in files(paths):
            cut = _split(path, jobs) if jobs > 1 else None
            if cut is None:
                yield from _here(judge, metered_file(path, what, progress), rows)
                continue
            if workers is None:
                from .pool import pool

                stack.enter_context(signals_interrupt())  # an API caller's run too: the pool is ended
                workers = stack.enter_context(pool(jobs))
            yield from _in_parts(workers, 2 * jobs, judge, cut, rows, what, progress)


def _split(path: Path, jobs: int) -> Split | None:
    """The file's parts for `jobs` workers (ingest/parts.py), None when it is read here."""
    from ..ingest.parts import split  # here: a run with one job reads every file here, without it (~2 ms)

    return split(path, PART_BYTES, jobs)


def _here(judge: Judge, raws: Iterable[RawKernel], rows: bool) -> Iterator[Chunk]:
    judged = judge(raws)
    while batch := list(islice(judged, CHUNK)):
        yield encode(batch, rows)


def _in_parts(workers: Pool, window: int, judge: Judge, cut: Split, rows: bool, what: str,
              progress: Steps) -> Iterator[Chunk]:
    """The parts' chunks in order, `window` parts in flight, each told to `progress` (a report's as
    launches of its total, a CSV's as parts). At the first part the workers could not read strictly,
    or that repeats a launch ID of a part before it, the rest of the file is read here in one stream
    (ingest/parts.py)."""
    from ..ingest.parts import ReportSplit
    from .pool import WorkerDied

    seen, ids = 0, set[int]()  # the launch IDs of the parts so far, where the export's own (CsvSplit.unique_ids)
    launches = [cut.bounds[-1]] if isinstance(cut, ReportSplit) else None
    calls = ((_part, (judge, cut, i, rows)) for i in range(cut.parts))
    progress(what, 0, launches[0] if launches else cut.parts, "launches" if launches else "parts")
    try:
        with closing(workers.ordered(calls, window)) as results:
            for i, done in enumerate(results):
                if done is None or not ids.isdisjoint(done[2]):  # read here, its error worded as a whole read's
                    yield from _here(judge, counted(cut.read_from(i, seen, ids), what, progress, launches, seen), rows)
                    return
                chunk, read, part_ids = done
                ids.update(part_ids)
                seen += read
                yield chunk
                if launches:
                    progress(what, seen, launches[0])
                else:
                    progress(what, i + 1, cut.parts, "parts")
    except WorkerDied:
        raise KernelscopeError(f"{cut.path}: a worker process reading it died (out of memory, or killed); "
                               "--jobs 1 reads it in this process") from None
    if not seen:
        raise InputError(cut.path, NO_LAUNCHES)


def _part(judge: Judge, cut: Split, i: int, rows: bool) -> tuple[Chunk, int, list[int]] | None:
    """In a worker: part i judged and encoded, with the launches read before the --kernel filter and
    their IDs (where the export's own); None when the part must be read in one stream with the rest
    of the file."""
    read, ids, keep_ids = 0, list[int](), cut.unique_ids

    def counted() -> Iterator[RawKernel]:
        nonlocal read
        for raw in cut.read_part(i):
            read += 1
            if keep_ids:
                ids.append(raw.launch_id)
            yield raw

    try:
        return encode(judge(counted()), rows), read, ids
    except (NotSimple, InputError):
        return None
