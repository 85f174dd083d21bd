"""Campaign writes under kills and contention (issue 10): SIGKILL and Ctrl-C at random moments of a
re-import never lose the cell nor leave a folder that reads as one, and parallel imports into one
cell all succeed (or fail cleanly) and leave it whole."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from hostile import TALLY
from kernelscope.campaign import store

FX = Path(__file__).parent / "fixtures"
SOURCES = {"a": FX / "gemm_bf16.ncu-rep", "b": FX / "fp8_gemm.ncu-rep", "c": FX / "bundle_attn_causal"}


def importer(root: Path, source: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "kernelscope.cli", "campaign", "import-ncu", "--root", str(root),
                             "--campaign", "k", "--cell-id", "c1", "--bundle", str(source)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def whole(root: Path) -> str:
    """The one cell, read as every reader reads it: whole, and from one of the sources."""
    cells = store.cells(root, "k")
    assert list(cells) == ["c1"], list(cells)
    names = {s["input"] for s in cells["c1"]["captured_sources"]}
    (origin,) = [k for k, v in SOURCES.items() if {v.name} == names]
    assert cells["c1"]["kernels"] and (root / "k/cells/c1/sources").is_dir()
    return origin


def staged(root: Path, proc: subprocess.Popen[str], before: set[str]) -> None:
    """Wait until the import has made its staging folder, one not among `before` (or has ended)."""
    cells, deadline = root / "k" / "cells", time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline \
            and not any(p.name.startswith(".c1.") and p.name not in before for p in cells.iterdir()):
        time.sleep(0.005)


def test_kill_loop_never_loses_the_cell(tmp_path: Path) -> None:
    rng = random.Random(10)
    t0 = time.monotonic()
    assert importer(tmp_path, SOURCES["a"]).wait() == 0
    full = time.monotonic() - t0  # how long one import takes here: kills land all over it
    seen, interrupted = set(), 0
    for i in range(40):
        t0 = time.monotonic()
        before = {p.name for p in (tmp_path / "k" / "cells").iterdir()}  # a killed import's staging stays a while
        proc = importer(tmp_path, SOURCES["bc"[i % 2]])
        if i % 10 == 9:  # one import in ten ends by itself: a cell to lose, and the time one takes under today's load
            assert proc.wait() == 0
            full = time.monotonic() - t0
            seen.add(whole(tmp_path))
            continue
        sig = signal.SIGINT if i % 5 == 4 else signal.SIGKILL
        # SIGKILL anywhere; SIGINT mid-import, past Python's start-up (before its handler a SIGINT is
        # a KeyboardInterrupt in the interpreter's own start, not ours to test): once the import has made
        # its staging, while it reads the report, however long start-up took under today's load
        if sig == signal.SIGKILL:
            time.sleep(rng.uniform(0.0, full * 1.2))
        else:
            staged(tmp_path, proc, before)
            time.sleep(rng.uniform(0.0, full * 0.1))
        proc.send_signal(sig)
        code = proc.wait()
        err = proc.stderr.read() if proc.stderr else ""
        TALLY["tried"] += 1
        if sig == signal.SIGINT and code == 130:
            assert err.strip().splitlines()[-1:] == ["kernelscope: interrupted"] and "Traceback" not in err, err
            interrupted += 1
        TALLY["handled"] += 1  # the interruption is survived: checked next
        seen.add(whole(tmp_path))
    assert importer(tmp_path, SOURCES["b"]).wait() == 0  # the next writer clears what the killed ones left
    assert whole(tmp_path) == "b" and not list((tmp_path / "k" / "cells").glob(".*"))
    assert len(seen) >= 2 and interrupted >= 1, (seen, interrupted)


def test_parallel_imports_into_one_cell(tmp_path: Path) -> None:
    procs = [importer(tmp_path, SOURCES["abc"[i % 3]]) for i in range(8)]
    for p in procs:
        code = p.wait(timeout=300)
        err = p.stderr.read() if p.stderr else ""
        TALLY["tried"] += 1
        assert code == 0 or (code == 2 and len(err.strip().splitlines()) == 1), err
        TALLY["clean" if code else "handled"] += 1
    whole(tmp_path)
    assert not list((tmp_path / "k" / "cells").glob(".*"))
    cell = json.loads((tmp_path / "k/cells/c1/ncu_kernels.json").read_text())
    assert all((tmp_path / "k/cells/c1" / f).is_file() for s in cell["captured_sources"] for f in s["sha256"])
