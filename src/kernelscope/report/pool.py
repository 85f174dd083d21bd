"""A process pool that cannot hang: each worker has a pipe of its own, and this process waits on
the pipes and on the workers' process sentinels together, so a worker that dies for any reason
(the OOM killer, a signal, a crash in ncu_report; while it starts up or mid-part) ends the wait at
once. concurrent.futures rests on its own detection of a dead worker, which misses one that dies
while it starts on Python 3.11.2 (Debian 12's python3): the run then waited for ever (issue 18).
Here nothing but a process's exit is needed.

Workers are spawned (not forked: a progress thread may be running), all at start, with SIGINT
blocked while they start so that a Ctrl-C to the terminal's process group cannot print a
traceback from a worker still importing; each then ignores SIGINT, which is this process's to
handle, and exits by itself when this process is gone (SIGKILL leaves it no one to answer to).
Leaving the pool (normally, by an error or a signal) ends every worker: asked to stop when all
went well, killed otherwise, and waited for in both cases, so no process outlives the run.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any

from ..errors import KernelscopeError, signals_held

STOP_GRACE_S = 5.0  # a worker asked to stop that has not exited by then is killed
Call = tuple[Callable[..., Any], tuple[Any, ...]]


class WorkerDied(KernelscopeError):
    """A worker process ended while the pool still needed it."""


@dataclass
class _Worker:
    process: BaseProcess
    conn: Connection


@contextmanager
def pool(jobs: int) -> Iterator[Pool]:
    """`jobs` workers, ended (and waited for) when the block ends, however it ends."""
    p = Pool(jobs)
    ok = False
    try:
        yield p
        ok = True
    finally:
        p.close(graceful=ok)


class Pool:
    def __init__(self, jobs: int) -> None:
        import multiprocessing
        from multiprocessing import resource_tracker

        ctx = multiprocessing.get_context("spawn")
        self._workers: list[_Worker] = []
        resource_tracker.ensure_running()  # it unblocks SIGINT once it has started: start it first
        try:
            # A Ctrl-C here is raised once every worker started is held here to be killed: one
            # started but not yet sent its start-up data would print an EOFError traceback
            with signals_held(), _sigint_blocked():
                for _ in range(jobs):
                    mine, theirs = ctx.Pipe(duplex=True)
                    proc = ctx.Process(target=_serve, args=(theirs, os.getpid()), daemon=True)
                    proc.start()
                    theirs.close()
                    self._workers.append(_Worker(proc, mine))
        except BaseException:
            self.close(graceful=False)
            raise

    def ordered(self, calls: Iterable[Call], window: int) -> Generator[Any, None, None]:
        """Each call's result, in the order of `calls`, with at most `window` calls sent or done but
        not yet yielded (so memory stays a few results). A call that raises re-raises here; a
        worker that dies raises WorkerDied. Stopping the iteration early leaves the rest unsent."""
        todo = iter(calls)
        idle = list(self._workers)
        busy: dict[int, tuple[_Worker, int]] = {}  # fileno of its pipe -> worker, call index
        done: dict[int, Any] = {}
        sent = given = 0
        more = True
        try:
            while True:
                while more and idle and sent - given < window:
                    call = next(todo, None)
                    if call is None:
                        more = False
                        break
                    w = idle.pop()
                    self._send(w, call)
                    busy[w.conn.fileno()] = (w, sent)
                    sent += 1
                if given in done:
                    yield done.pop(given)
                    given += 1
                    continue
                if not busy:
                    return
                for w, i, (ok, value) in self._results(busy):
                    idle.append(w)
                    if not ok:
                        raise value
                    done[i] = value
        except GeneratorExit:  # the caller stopped early: read the calls still running, for the next caller
            while busy:
                self._results(busy)
            raise

    def _results(self, busy: dict[int, tuple[_Worker, int]]) -> list[tuple[_Worker, int, tuple[bool, Any]]]:
        """The replies of the busy workers that have one, waiting until one does; any worker's exit
        (busy or idle) is WorkerDied."""
        sentinels = {w.process.sentinel for w in self._workers}
        ready = wait([w.conn for w, _ in busy.values()] + list(sentinels))
        if any(r in sentinels for r in ready if isinstance(r, int)):
            raise WorkerDied("a worker process died")
        out = []
        for r in ready:
            assert isinstance(r, Connection)
            w, i = busy.pop(r.fileno())
            try:
                out.append((w, i, r.recv()))
            except (EOFError, OSError):
                raise WorkerDied("a worker process died") from None
        return out

    def _send(self, w: _Worker, call: Call) -> None:
        try:
            w.conn.send(call)
        except (BrokenPipeError, ConnectionResetError, EOFError):
            raise WorkerDied("a worker process died") from None

    def close(self, graceful: bool) -> None:
        """Ask every worker to stop (graceful) or kill it; wait for all of them either way."""
        deadline = time.monotonic() + STOP_GRACE_S
        for w in self._workers:
            if graceful and w.process.is_alive():
                try:
                    w.conn.send(None)
                except OSError:
                    pass
            else:
                w.process.kill()
        for w in self._workers:
            w.process.join(max(0.0, deadline - time.monotonic()) if graceful else None)
            if w.process.is_alive():
                w.process.kill()
                w.process.join()
            w.conn.close()
            w.process.close()
        self._workers = []


@contextmanager
def _sigint_blocked() -> Iterator[None]:
    """SIGINT blocked in this thread while workers start: a spawned worker starts with it blocked
    (exec keeps the mask) until it ignores it."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _serve(conn: Connection, parent: int) -> None:
    """A worker: run each call sent until told to stop (None) or the pipe closes; send back
    (True, result) or (False, the exception)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # blocked while it started, now ignored
    threading.Thread(target=_exit_without, args=(parent,), daemon=True).start()
    while True:
        try:
            call = conn.recv()
        except (EOFError, OSError):
            return
        if call is None:
            return
        fn, args = call
        try:
            reply: tuple[bool, Any] = (True, fn(*args))
        except Exception as exc:  # re-raised in the parent, as if the call had run there
            reply = (False, exc)
        try:
            conn.send(reply)
        except (BrokenPipeError, ConnectionResetError):
            return
        except Exception as exc:  # a result or exception that does not pickle
            conn.send((False, KernelscopeError(f"a worker's result could not be sent back ({exc})")))


def _exit_without(parent: int) -> None:
    """A worker whose parent is gone (SIGKILL, an OOM kill) exits within a second rather than work
    on for no one."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(1)
