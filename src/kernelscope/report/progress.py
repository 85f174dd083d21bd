"""Progress for runs that take a while: silent for the first two seconds (most runs never show
it), then the current step, how far it is (launches read of a report's total, parts of a CSV) with
the time left at its pace so far, and the elapsed time, on stderr: redrawn in place on a terminal,
one line per step (and every ten seconds) in a CI log. stdout is never touched."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import NamedTuple, Protocol, TextIO

from ..ingest import Inputs, expand, iter_file
from ..model import RawKernel
from .safe_text import clean


class Steps(Protocol):
    """Told what a run is doing now and, where it counts, how many of how many (None: unknown)."""

    def __call__(self, what: str, done: int | None = None, total: int | None = None,
                 unit: str = "launches") -> None: ...


def quiet(what: str, done: int | None = None, total: int | None = None, unit: str = "launches") -> None:
    """Steps that nobody watches (the API's default)."""


class Step(NamedTuple):
    """What a Ticker shows: one tuple, swapped whole, so its thread never reads half an update."""

    what: str
    done: int | None
    total: int | None
    unit: str
    since: float  # when this step began
    first: int  # its count then: the pace is counted from here


def _seconds(s: float) -> str:
    return f"{s:.0f} s" if s < 100 else f"{s // 60:.0f} min {s % 60:02.0f} s"


def status_line(step: Step, now: float, elapsed: float) -> str:
    """`kernelscope: reading x.ncu-rep … 120/300 launches, 4 s, ETA 6 s`: the time left at the pace
    of this step so far, once it has counted something."""
    if step.done is None:
        return f"kernelscope: {step.what} … {_seconds(elapsed)}"
    line = f"kernelscope: {step.what} … {step.done:,}{'' if step.total is None else f'/{step.total:,}'} {step.unit}, " \
           f"{_seconds(elapsed)}"
    gone, ran = step.done - step.first, now - step.since
    if step.total is not None and gone > 0 and step.total > step.done:
        line += f", ETA {_seconds(ran * (step.total - step.done) / gone)}"
    return line


class Ticker:
    def __init__(self, stream: TextIO | None, after: float = 2.0, every: float = 10.0) -> None:
        self.stream = stream
        self.after = after
        self.every = every  # seconds between lines when not on a terminal
        self.live = bool(stream is not None and stream.isatty())
        self._raw = ""
        self._step = Step("", None, None, "", 0.0, 0)
        self._start = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._drawn = False

    def step(self, what: str, done: int | None = None, total: int | None = None, unit: str = "launches") -> None:
        """Name what the run is doing now, and how far it is (shown only once the run is past `after`
        seconds). Called a launch at a time, so the same step costs one tuple."""
        s = self._step
        if what is self._raw or what == self._raw:
            self._step = Step(s.what, done, total, unit, s.since, s.first)
        else:
            self._raw = what
            self._step = Step(clean(what), done, total, unit, time.monotonic(), done or 0)

    def __enter__(self) -> Ticker:
        if self.stream is not None:
            self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        if self._drawn and self.live and self.stream is not None:
            self._write("\r\x1b[K")

    def _write(self, text: str) -> None:
        assert self.stream is not None
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # stderr gone: progress is not worth failing the run for
            self._stop.set()

    def _run(self) -> None:
        said, said_at = "", 0.0
        while not self._stop.wait(min(0.25, self.every)):  # a step shorter than a poll is never shown
            now = time.monotonic()
            elapsed = now - self._start
            step = self._step
            if elapsed < self.after or not step.what:
                continue
            line = status_line(step, now, elapsed)
            if self.live:
                self._write("\r\x1b[K" + line)
                self._drawn = True
            elif step.what != said or now - said_at >= self.every:
                self._write(line + "\n")
                said, said_at = step.what, now


def counted(raws: Iterable[RawKernel], what: str, progress: Steps, total: list[int] | None = None,
            start: int = 0) -> Iterator[RawKernel]:
    """`raws` as they are read, telling `progress` each one done, of `total[0]` once the reader has
    put a count there."""
    done = start
    for raw in raws:
        yield raw
        done += 1
        progress(what, done, total[0] if total else None)


def files(paths: Inputs) -> Iterator[tuple[Path, str]]:
    """Every input file (ingest.expand), with the step of reading it: `reading NAME (file n of N)`."""
    found = expand(paths)
    for n, path in enumerate(found, 1):
        yield path, f"reading {path.name}" + (f" (file {n} of {len(found)})" if len(found) > 1 else "")


def metered_file(path: Path, what: str, progress: Steps) -> Iterator[RawKernel]:
    """The file's launches (ingest.iter_file) counted as they are read and judged, of its total where
    the file says it: a report's launch count, known once it is open (a CSV's is known only at its end)."""
    progress(what)
    total: list[int] = []
    yield from counted(iter_file(path, total.append), what, progress, total)


def metered(paths: Sequence[Path], progress: Steps) -> Iterator[RawKernel]:
    """Every launch of the inputs (ingest.iter_inputs), each file's counted (metered_file)."""
    for path, what in files(paths):
        yield from metered_file(path, what, progress)
