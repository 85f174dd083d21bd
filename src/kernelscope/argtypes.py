"""Command-line value types: a bad value is refused while the arguments are parsed, as one line
naming the option, before anything runs. `--timeout nan` would otherwise reach subprocess and
poll loops (NaN compares false: a wait that never ends), `--out ''` would mean the working
directory, and a negative count would be passed to ncu."""

from __future__ import annotations

import argparse
import math
from typing import NoReturn

from .errors import UsageError


class Parser(argparse.ArgumentParser):
    """argparse with kernelscope's error contract: a bad option is a UsageError, which the CLI prints
    as every error (one inert line on stderr, exit code 2)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)")


def path(text: str) -> str:
    """A file or directory name: an empty one would silently mean the working directory."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path")
    return text


def words(text: str) -> tuple[str, ...]:
    """A command given as one shell-quoted string (an image's ENTRYPOINT): split here, so that an
    unclosed quote is refused as the option's error, not a traceback."""
    import shlex
    try:
        split = tuple(shlex.split(text))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r:.60}: {exc} (quote it as a shell would)") from None
    if not split:
        raise argparse.ArgumentTypeError("an empty command")
    return split


def _finite(text: str, what: str, above_zero: bool) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r:.40} is not {what}") from None
    if not math.isfinite(value) or value < 0 or (above_zero and value == 0):
        raise argparse.ArgumentTypeError(f"{text!r:.40}: must be a finite number, "
                                         + ("above 0" if above_zero else "0 or more"))
    return value


def seconds(text: str) -> float:
    """A wait, in seconds: finite and positive."""
    return _finite(text, "a number of seconds", above_zero=True)


def amount(text: str) -> float:
    """A count of work (FLOP, bytes): finite and not negative."""
    return _finite(text, "a number", above_zero=False)


def _integer(text: str, low: int, high: int | None = None) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r:.40} is not an integer") from None
    if value < low or (high is not None and value > high):
        raise argparse.ArgumentTypeError(f"{value} is out of range ({low}..{high if high is not None else ''})")
    return value


def count(text: str) -> int:
    """0, 1, 2, ..."""
    return _integer(text, 0)


def positive(text: str) -> int:
    """1, 2, 3, ..."""
    return _integer(text, 1)


def port(text: str) -> int:
    return _integer(text, 1, 65535)
