"""Progress for runs that take a while: silent for the first two seconds (most runs never show
it), then the current step and the elapsed time on stderr — redrawn in place on a terminal, one
line per step (and every ten seconds) in a CI log. stdout is never touched."""

from __future__ import annotations

import threading
import time
from types import TracebackType
from typing import TextIO

from .text import clean


class Ticker:
    def __init__(self, stream: TextIO | None, after: float = 2.0, every: float = 10.0) -> None:
        self.stream = stream
        self.after = after
        self.every = every  # seconds between lines when not on a terminal
        self.live = bool(stream is not None and stream.isatty())
        self._what = ""
        self._start = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._drawn = False

    def step(self, what: str) -> None:
        """Name what the run is doing now (shown only once the run is past `after` seconds)."""
        self._what = clean(what)

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
        while not self._stop.wait(0.25):
            now = time.monotonic()
            elapsed = now - self._start
            if elapsed < self.after or not self._what:
                continue
            line = f"kernelscope: {self._what} … {elapsed:.0f} s"
            if self.live:
                self._write("\r\x1b[K" + line)
                self._drawn = True
            elif self._what != said or now - said_at >= self.every:
                self._write(line + "\n")
                said, said_at = self._what, now
