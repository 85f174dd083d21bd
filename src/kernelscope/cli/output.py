"""What the verbs print: report lines to stdout, progress and errors to stderr, both inert; the
tables in the asked format, fitted to the terminal."""

from __future__ import annotations

import io
import os
import sys
from typing import IO, Any

from ..errors import KernelscopeError
from ..report.safe_text import clean


def say(line: str) -> None:
    """A line to stderr (progress, what was written, an error), inert: file names and names from
    reports or clusters in it are data, so their escape sequences never reach the terminal."""
    print(f"kernelscope: {clean(line)}", file=sys.stderr, flush=True)


def show(line: str) -> None:
    """A line of a verb's report to stdout, inert as say's."""
    print(clean(line))


def emit(text: str | bytes) -> None:
    """Print to stdout (bytes only where it has a byte buffer: see emit_file). A reader that stopped
    reading (`| head`) ends the output quietly; a closed or full stdout is an error of one line."""
    out = sys.stdout
    if out is None:
        raise KernelscopeError("stdout is closed; redirect it to a file, or use --out where the verb has it")
    try:
        if isinstance(text, bytes):
            out.flush()
            out.buffer.write(text)
            out.buffer.flush()
        else:
            out.write(text)
            out.flush()
    except BrokenPipeError:
        silence_stdout()
    except OSError as exc:
        raise KernelscopeError(f"cannot write to stdout ({exc.strerror or exc})") from exc


def emit_file(spool: IO[bytes]) -> None:
    """A spooled UTF-8 document to stdout, a megabyte at a time: as bytes, or as text where stdout
    is a text stream only (a test's, an embedding host's)."""
    if getattr(sys.stdout, "buffer", None) is not None:
        for block in iter(lambda: spool.read(1 << 20), b""):
            emit(block)
    else:
        text = io.TextIOWrapper(spool, encoding="utf-8", newline="")  # as written: CRLF rows, a \r in a name
        for chunk in iter(lambda: text.read(1 << 20), ""):
            emit(chunk)


def silence_stdout() -> None:
    """Point stdout at /dev/null so that nothing (not even the exit-time flush) writes to a pipe
    whose reader has gone."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError):
        pass


def terminal_width() -> int | None:
    """The width to fit: $COLUMNS, else the terminal's; piped with no $COLUMNS, no limit."""
    cols = os.environ.get("COLUMNS", "")
    if cols.isdigit() and int(cols) > 0:
        return int(cols)
    if sys.stdout is not None and sys.stdout.isatty():
        import shutil

        return shutil.get_terminal_size().columns
    return None


def _colour() -> bool:
    return sys.stdout is not None and sys.stdout.isatty() and "NO_COLOR" not in os.environ


def ticker() -> Any:
    from ..report.progress import Ticker

    return Ticker(sys.stderr)


def formatted(table: Any, fmt: str, doc: Any = None) -> str:
    """A table model in the asked format (json: `doc`, the verb's own document)."""
    from ..report.table import render_csv, render_markdown, render_text

    if fmt == "json":
        import json

        return json.dumps(doc, indent=1, allow_nan=False) + "\n"
    if fmt == "csv":
        return str(render_csv(table))
    if fmt == "markdown":
        return str(render_markdown(table))
    return str(render_text(table, terminal_width(), _colour()))


def analysis_text(an: Any, fmt: str, per_launch: bool = False, details: bool = False) -> str:
    """The table or markdown view (json and csv are streamed by app.stream_results)."""
    from ..report import markdown, terminal

    if fmt == "markdown":
        return markdown.analysis(an.items, an.headline(), an.labels(), per_launch)
    return terminal.render(an.items, an.headline(), an.labels(), terminal_width(), _colour(), details, per_launch)
