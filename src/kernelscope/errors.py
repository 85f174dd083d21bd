"""Typed errors: every failure the user can cause becomes one of these, and the CLI turns each into
one line naming the file (or the option) and what is wrong, with exit code 2."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class KernelscopeError(Exception):
    """Base of every error kernelscope raises on purpose (the Python API raises nothing else)."""


class InputError(KernelscopeError):
    """A report, CSV, bundle, campaign or ceilings file that cannot be read as what it claims to be."""

    def __init__(self, path: object, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = str(path)
        self.problem = problem

    def __reduce__(self) -> tuple[type[InputError], tuple[str, str]]:
        """Pickled by its two parts (a worker process raises it to the parent)."""
        return InputError, (self.path, self.problem)


class UsageError(KernelscopeError):
    """Options or arguments the command line cannot take (argparse's refusal)."""


class CeilingsError(KernelscopeError):
    """No usable ceiling for a device (unknown device, missing precision)."""


class PlanError(KernelscopeError):
    """A capture that kernelscope refuses to run as asked (and says why and what to do)."""


class KubeError(KernelscopeError):
    """kubectl or helm failed, timed out, or the cluster is in a state the run cannot go on from."""


class Interrupted(BaseException):
    """A signal (SIGINT, SIGTERM, SIGHUP) asked us to stop: `finally` blocks clean up, then the CLI
    exits 128 + signal. A BaseException, like KeyboardInterrupt, so no `except Exception` eats it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)  # `timeout`, a cancelled CI job, a closed terminal
_HOLDING = [0]  # signals_held blocks open now
_PENDING: list[int] = []  # a stop signal (or Ctrl-C) that came while one was open


@contextmanager
def signals_interrupt() -> Iterator[None]:
    """While the block runs, SIGTERM and SIGHUP raise Interrupted wherever the main thread is, as
    Ctrl-C raises KeyboardInterrupt, so every `finally` runs (staged files, staging folders, the
    worker pool) before the exit with 128 + N. From the first one on they are ignored, so a second
    cannot cut that cleanup short. Ctrl-C keeps Python's meaning (a SIGINT ignored or handled by
    the caller is left so); like the others it waits for the end of a signals_held block. The CLI
    holds this for its whole run (cli.main); only the main thread can set handlers, so elsewhere it
    does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    mine = [*STOP_SIGNALS, *([signal.SIGINT] if signal.getsignal(signal.SIGINT) is signal.default_int_handler else [])]
    old = {s: signal.getsignal(s) for s in mine}

    def interrupt(signum: int, _frame: FrameType | None) -> None:
        if signum != signal.SIGINT:
            for s in STOP_SIGNALS:
                signal.signal(s, signal.SIG_IGN)
        if _HOLDING[0]:
            _PENDING.append(signum)
            return
        raise _stop(signum)

    for s in mine:
        signal.signal(s, interrupt)
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _stop(signum: int) -> BaseException:
    return KeyboardInterrupt() if signum == signal.SIGINT else Interrupted(signum)


@contextmanager
def signals_held() -> Iterator[None]:
    """A stop signal or Ctrl-C that comes inside the block is raised at its end: for making a temp file or
    folder and recording it for cleanup (one landing between the two would leave a temp no cleanup
    knows of), or renames that go together. Open it inside the `try` whose `finally` cleans up.
    (A signal mask would not do: the kernel hands the signal to another thread, a progress ticker's.)"""
    _HOLDING[0] += 1
    try:
        yield
    finally:
        _HOLDING[0] -= 1
        if not _HOLDING[0] and _PENDING:
            raise _stop(_PENDING.pop())
