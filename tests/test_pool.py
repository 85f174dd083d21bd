"""The worker pool (report/pool.py) cannot hang: a worker that dies by any signal or exit, while it
starts or mid-call, busy or idle, ends the wait at once as WorkerDied, and leaving the pool leaves
no process. Real spawned processes; the calls are standard-library functions, so the workers need
nothing of the tests."""

from __future__ import annotations

import operator
import os
import signal
import time

import pytest

from kernelscope.errors import InputError
from kernelscope.report.pool import Pool, WorkerDied, pool


def _alive(pids: list[int]) -> list[int]:
    out = []
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        try:  # a zombie is dead for our purpose
            if open(f"/proc/{pid}/stat").read().split(") ", 1)[1].startswith("Z"):
                continue
        except OSError:
            continue
        out.append(pid)
    return out


def _pids(p: Pool) -> list[int]:
    return [w.process.pid for w in p._workers if w.process.pid is not None]


def test_results_come_in_order_within_the_window() -> None:
    with pool(2) as p:
        calls = [(time.sleep, (0.05 * (i % 3),)) for i in range(7)]
        assert list(p.ordered(calls, 3)) == [None] * 7
        assert list(p.ordered([(operator.mul, (i, i)) for i in range(20)], 4)) == [i * i for i in range(20)]


def test_an_error_in_a_call_is_raised_here_with_its_parts() -> None:
    """InputError crosses the pipe whole (it is rebuilt from its path and problem)."""
    with pytest.raises(InputError, match=r"^big\.csv: line 3 is short$") as caught, pool(2) as p:
        list(p.ordered([(operator.mul, (2, 3)), (_raise_input_error, ("big.csv", "line 3 is short"))], 2))
    assert (caught.value.path, caught.value.problem) == ("big.csv", "line 3 is short")


def _raise_input_error(path: str, problem: str) -> None:
    raise InputError(path, problem)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS])
def test_a_worker_killed_mid_call_is_worker_died_at_once(sig: signal.Signals) -> None:
    p = Pool(2)
    pids = _pids(p)
    t0 = time.monotonic()
    with pytest.raises(WorkerDied):
        list(p.ordered([(time.sleep, (0.2,)), (signal.raise_signal, (sig,)), (time.sleep, (0.2,))], 4))
    assert time.monotonic() - t0 < 10
    p.close(graceful=False)
    assert _alive(pids) == []


def test_a_worker_that_exits_is_worker_died() -> None:
    with pytest.raises(WorkerDied), pool(2) as p:
        list(p.ordered([(os._exit, (3,))], 2))


@pytest.mark.parametrize("after", [0.0, 0.01, 0.05, 0.2])
def test_a_worker_killed_while_it_starts_is_worker_died(after: float) -> None:
    """The death concurrent.futures missed on Python 3.11.2: the worker is killed while its
    interpreter is still importing, before it ever read a call."""
    p = Pool(2)
    pids = _pids(p)
    time.sleep(after)
    os.kill(pids[0], signal.SIGKILL)
    t0 = time.monotonic()
    with pytest.raises(WorkerDied):
        list(p.ordered([(time.sleep, (0.5,)) for _ in range(6)], 4))
    assert time.monotonic() - t0 < 10
    p.close(graceful=False)
    assert _alive(pids) == []


def test_an_idle_worker_killed_is_worker_died() -> None:
    """One call for two workers: the idle one dying still ends the run (nothing may hang on it later)."""
    p = Pool(2)
    pids = _pids(p)
    with pytest.raises(WorkerDied):
        for _ in p.ordered([(time.sleep, (0.3,)), (time.sleep, (0.3,))], 1):
            os.kill(pids[1], signal.SIGKILL)
    p.close(graceful=False)
    assert _alive(pids) == []


def test_stopping_early_leaves_the_pool_usable_and_closing_leaves_no_process() -> None:
    p = Pool(2)
    pids = _pids(p)
    it = p.ordered([(operator.add, (i, 1)) for i in range(10)], 4)
    assert next(it) == 1
    it.close()  # the calls still running are read, so the next caller starts clean
    assert list(p.ordered([(operator.add, (i, 2)) for i in range(3)], 2)) == [2, 3, 4]
    t0 = time.monotonic()
    p.close(graceful=True)
    assert time.monotonic() - t0 < 5
    assert _alive(pids) == []
