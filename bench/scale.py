"""Scale: kernels/s, peak RSS and the ncu_report floor side by side, and how time grows with N.

Builds raw-CSV inputs of 1k/10k/100k launches by replicating the real fixture rows
(tests/fixtures/*-raw.csv) with distinct IDs, times every path as a whole process (start-up
included, as a user sees it) and reads each process's own peak RSS (wait4). The .ncu-rep path is
held against the floor any reader of that file pays: ncu_report loading the 300-launch report and
making of each launch the lookups kernelscope's reader makes (its ~150 counters by name, the
names, the rule results, the source file), the cheapest way the module offers. Two lines are
held against it: the reading alone (every launch into its record, as analyze reads it: the
ingest) and analyze whole (reading, judging and writing JSON). Then fits log(time) = a + b log(N)
for analyze, campaign render and the roofline: b ~ 1 is linear. Render and roofline inputs give
every launch its own kernel name, so the page has N rows and the figure N points (the stress
case), with every figure real.

Child processes compile kernelscope's modules once into a private bytecode cache, as an installed
package has them (this workplace sets PYTHONDONTWRITEBYTECODE, which would make every run compile
~40 modules, ~50 ms); the ncu_report floor runs under the same settings. To measure another tree
(the before column), point PYTHONPATH at its src/.

This machine's speed moves by a third from hour to hour: to judge a change to the per-launch path,
count it with bench/instructions.py, which does not move.

Every analyze runs twice: `--jobs 1` (one process) and the default (a worker a core, which reads a
large raw CSV or report in parts); the .ncu-rep line also splits each side into its start-up and
what it then spends a launch.

    taskset -c 0,1 python3 bench/scale.py [--sizes 1000,10000,100000] [--render-sizes 1000,10000,20000]
    python3 bench/scale.py --cores 2,3,4,8,16   # the largest size again on 2, 3, ... of this machine's CPUs
    python3 bench/scale.py --sizes '' --render-sizes '' --report big.ncu-rep   # the report line alone
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from itertools import islice
from pathlib import Path

from kernelscope.ingest import ncu_rep
from kernelscope.ingest.names import short_name

ROOT = Path(__file__).resolve().parents[1]
FX = ROOT / "tests" / "fixtures"
MANY = Path(__file__).parent / "data" / "many.ncu-rep.gz"
KS = [sys.executable, "-m", "kernelscope.cli"]
FLOOR = """
import sys, ncu_report
wanted = open(sys.argv[2]).read().split()
ctx = ncu_report.load_report(sys.argv[1])
A = ncu_report.IAction
for r in range(ctx.num_ranges()):
    rng = ctx.range_by_idx(r)
    for a in range(rng.num_actions()):
        action = rng.action_by_idx(a)
        action.name(A.NameBase_DEMANGLED), action.name(A.NameBase_FUNCTION), action.workload_type()
        device = action.metric_by_name("device__attribute_display_name")
        if device is not None:
            device.as_string()
        for n in wanted:
            metric = action.metric_by_name(n)
            if metric is not None:
                metric.as_double()
        action.rule_results_as_dicts()
        executed = action.metric_by_name("inst_executed")
        if executed is not None and executed.num_instances():
            action.source_info(executed.correlation_ids().as_uint64(0))
"""  # the lookups kernelscope's reader makes of each launch (ingest/ncu_rep.py), the cheapest way the module offers
INGEST = """
import sys
from pathlib import Path
from kernelscope.ingest import iter_file
for _ in iter_file(Path(sys.argv[1])):
    pass
"""  # kernelscope's reading alone: every launch into its record, as analyze reads it


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run(argv: list[str], out: Path | None = None, cpus: set[int] | None = None) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of one process; `cpus`: the only CPUs it may use."""
    with open(out or os.devnull, "wb") as sink:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=sink, stderr=subprocess.PIPE, env=ENV,
                                preexec_fn=None if cpus is None else lambda: os.sched_setaffinity(0, cpus))
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(argv)}\n{proc.stderr.read().decode() if proc.stderr else ''}")
    return seconds, usage.ru_maxrss / 1024


def best(argv: list[str], runs: int) -> tuple[float, float]:
    """The fastest of `runs` runs' seconds, and the largest peak RSS any of them reached."""
    return paired({"": argv}, runs)[""]


def paired(argvs: dict[str, list[str]], runs: int) -> dict[str, tuple[float, float]]:
    """best() of each, the runs taken in turn, so a change in this machine's load falls on all alike."""
    results: dict[str, list[tuple[float, float]]] = {label: [] for label in argvs}
    for _ in range(runs):
        for label, argv in argvs.items():
            results[label].append(run(argv))
    return {label: (min(r[0] for r in rs), max(r[1] for r in rs)) for label, rs in results.items()}


def raw_csv(n: int, path: Path, distinct: bool = False) -> None:
    """n launches: the fixture rows in turn, each with its own ID, in the first fixture's columns;
    `distinct`: each also its own kernel name (the fixture's base name and the launch's number)."""
    tables = [list(csv.reader(io.StringIO((FX / f).read_text()))) for f in ("decode_gemm-raw.csv", "gemm_bf16-raw.csv")]
    header, units = tables[0][0], tables[0][1]
    rows = []
    for t in tables:
        at = {h: i for i, h in enumerate(t[0])}
        rows += [[r[at[h]] if h in at else "" for h in header] for r in t[2:]]
    id_at, name_at = header.index("ID"), header.index("Kernel Name")
    with path.open("w", newline="") as fh:
        w = csv.writer(fh, quoting=csv.QUOTE_ALL, lineterminator="\n")
        w.writerow(header)
        w.writerow(units)
        for i in range(n):
            row = list(rows[i % len(rows)])
            row[id_at] = str(i)
            if distinct:
                row[name_at] = f"{short_name(row[name_at])}_k{i}"
            w.writerow(row)


def slope(points: list[tuple[int, float]]) -> float:
    xs, ys = [math.log(n) for n, _ in points], [math.log(t) for _, t in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


def line(path: str, n: int, seconds: float, rss: float, floor: str = "—", extra: str = "") -> None:
    print(f"| {path} | {n:,} | {seconds:.2f} | {n / seconds:,.0f} | {rss:,.0f} | {rss * 1024 / n:,.1f} | {floor} "
          f"| {extra} |", flush=True)


def fitted(what: str, points: list[tuple[int, float]]) -> None:
    if len(points) > 1:
        print(f"{what}: time ~ N^{slope(points):.2f}", flush=True)


def stages(n: int, path: Path, runs: int = 7) -> None:
    """Where a raw CSV launch's time goes, µs a kernel, in this process (no start-up): reading it
    into its raw counters, deriving its record, judging it; then the writers as the stream runs
    them: each launch encoded as soon as it is judged (its objects fresh), timed around the
    encoding alone. JSON: the kernel object built, encoded and tallied for the frontier; CSV line:
    flattened and formatted on top (in a worker when there are parts); then what the CSV sink
    spends on it in the writing process. Best of `runs` passes; a one-launch chunk's own cost
    (~1 µs) is included."""
    from kernelscope.analysis.derive import derive
    from kernelscope.analysis.pipeline import judge_for
    from kernelscope.ingest import iter_file
    from kernelscope.report.writers import CsvSink, encode

    clock = time.perf_counter
    judge, _ = judge_for([path])

    def fastest(step: Callable[[], object]) -> float:
        times = []
        for _ in range(runs):
            t0 = clock()
            step()
            times.append(clock() - t0)
        return min(times)

    raws = list(islice(iter_file(path), n))
    records = [derive(r) for r in raws]
    read = fastest(lambda: list(islice(iter_file(path), n)))
    derived = fastest(lambda: [derive(r) for r in raws])
    judged = fastest(lambda: [judge.one(r) for r in records])
    passes = []
    for _ in range(runs):
        as_json = with_csv = 0.0
        for a in judge(raws):
            t0 = clock()
            encode([a])
            t1 = clock()
            encode([a], rows=True)
            t2 = clock()
            as_json, with_csv = as_json + (t1 - t0), with_csv + (t2 - t1)
        passes.append((as_json, with_csv))
    as_json, with_csv = min(passes)
    chunk = encode(judge(raws), rows=True)
    sink = fastest(lambda: CsvSink(io.BytesIO()).add(chunk))
    us = [1e6 * t / len(raws) for t in (read, derived, judged, as_json, with_csv - as_json, sink)]
    print(f"stages over {len(raws):,} raw CSV launches, µs/kernel (best of {runs}): read {us[0]:.0f}; derive "
          f"{us[1]:.0f}; judge {us[2]:.0f}; JSON {us[3]:.1f}; CSV line {us[4]:.1f} more; CSV sink in the writing "
          f"process {us[5]:.1f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--render-sizes", default="1000,10000")
    ap.add_argument("--runs", type=int, default=3, help="best of N for the small fixed inputs")
    ap.add_argument("--cores", default="", help="e.g. 2,4,8: also analyze the largest size on only that many of "
                    "this process's CPUs (default workers: one a CPU)")
    ap.add_argument("--report", type=Path, default=MANY, help="the .ncu-rep (or .gz) held against the ncu_report "
                    "floor (default: bench/data/many.ncu-rep.gz, 300 launches)")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",") if x]
    cores = [int(x) for x in args.cores.split(",") if x]
    render_sizes = [int(x) for x in args.render_sizes.split(",") if x]
    print(f"{len(os.sched_getaffinity(0))} cores, Python {sys.version.split()[0]}; `jobs 1`: one process, "
          "`jobs N`: the default, every core")
    print("| path | kernels | s | kernels/s | peak RSS MB | KB/kernel | x ncu_report floor | note |\n"
          "|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        ENV["PYTHONPYCACHEPREFIX"] = str(d / "pycache")
        for warm in (["analyze", str(FX / "gemm_bf16.ncu-rep"), "--format", "json"],  # compile once, as installed
                     ["roofline", str(FX / "gemm_bf16.ncu-rep"), "--out", str(d / "warm.png")]):
            run([*KS, *warm])
        fits: dict[str, list[tuple[int, float]]] = {"jobs 1": [], "jobs N": []}
        for n in sizes:
            raw_csv(n, d / f"k{n}.csv")
            for label, jobs in (("jobs 1", ["--jobs", "1"]), ("jobs N", [])):
                seconds, rss = run([*KS, "analyze", str(d / f"k{n}.csv"), "--format", "json", *jobs],
                                   d / "out.json")
                fits[label].append((n, seconds))
                line(f"analyze raw CSV -> JSON, {label}", n, seconds, rss)
            for k in cores if n == max(sizes) else []:
                mine = set(sorted(os.sched_getaffinity(0))[:k])
                seconds, rss = run([*KS, "analyze", str(d / f"k{n}.csv"), "--format", "json"], d / "out.json", mine)
                line(f"analyze raw CSV -> JSON, {len(mine)} CPUs", n, seconds, rss)
            (d / f"k{n}.csv").unlink()
        for label, points in fits.items():
            fitted(f"analyze, {label}", points)
        if sizes:
            raw_csv(min(sizes[0], 2000), d / "w.csv")
            stages(2000, d / "w.csv")
        rep = d / "report.ncu-rep"
        data = args.report.read_bytes()
        rep.write_bytes(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
        launches = ncu_rep.launches(rep)
        wanted = d / "wanted.txt"
        wanted.write_text("\n".join(ncu_rep.NUMERIC_WANTED))
        timed = paired({"floor": [sys.executable, "-c", FLOOR, str(rep), str(wanted)],
                        "floor start": [sys.executable, "-c", "import ncu_report"],
                        "ingest": [sys.executable, "-c", INGEST, str(rep)],
                        "ours start": [sys.executable, "-c", "import kernelscope.app, kernelscope.report.stream, "
                                       "ncu_report"],
                        "jobs 1": [*KS, "analyze", str(rep), "--format", "json", "--jobs", "1"],
                        "jobs N": [*KS, "analyze", str(rep), "--format", "json"]}, max(args.runs, 7))
        floor, floor_rss = timed["floor"]
        for label in ("ingest", "jobs 1", "jobs N"):
            ours, rss = timed[label]
            line(".ncu-rep, read alone" if label == "ingest" else f".ncu-rep -> JSON, {label}", launches, ours, rss,
                 f"{ours / floor:.2f}x", f"floor {floor:.2f} s, {floor_rss:.0f} MB")
        start, floor_start = timed["ours start"][0], timed["floor start"][0]
        per, floor_per = (timed["jobs 1"][0] - start) / launches, (floor - floor_start) / launches
        print(f".ncu-rep, jobs 1: start-up {start:.3f} s vs the floor's {floor_start:.3f} s; after it {1e3 * per:.2f} "
              f"ms a launch vs the floor's {1e3 * floor_per:.2f} ms ({per / floor_per:.2f}x)", flush=True)
        cells = [run([*KS, "campaign", "import-ncu", "--root", str(d / "c"), "--campaign", "s", "--cell-id", f"c{i}",
                      "--bundle", str(FX / "gemm_bf16.ncu-rep")]) for i in range(args.runs + 2)]
        print(f"campaign import-ncu: {min(s for s, _ in cells):.3f} s per cell (best of {len(cells)}), "
              f"peak RSS {max(r for _, r in cells):.0f} MB")
        renders, plots = [], []
        for n in render_sizes:
            src, root = d / f"named{n}.csv", d / f"r{n}"
            raw_csv(n, src, distinct=True)
            run([*KS, "campaign", "import-ncu", "--root", str(root), "--campaign", "s", "--cell-id", "c1", "--bundle",
                 str(src)])
            seconds, rss = run([*KS, "campaign", "render", "--root", str(root), "--campaign", "s"])
            renders.append((n, seconds))
            html = (root / "s" / "report.html").stat().st_size / 1e6
            line("campaign render (from ncu_kernels.json)", n, seconds, rss, extra=f"HTML {html:.1f} MB")
            seconds, rss = run([*KS, "roofline", str(src), "--per-launch", "--out", str(d / "roof.png")])
            plots.append((n, seconds))
            line("roofline PNG, one point a kernel", n, seconds, rss)
        fitted("render", renders)
        fitted("roofline", plots)
        start, _ = best([*KS, "--help"], args.runs + 2)
        print(f"start-up (kernelscope --help): {start:.3f} s")


if __name__ == "__main__":
    main()
