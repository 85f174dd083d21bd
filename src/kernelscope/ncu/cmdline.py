"""ncu's own command line, as a report records it (ReportSessionDetails.ProfilerCmdline): ncu's
options, and the program it ran with that program's arguments.

ncu records its argv joined by spaces, unquoted, so a word holding a space reads as two: that is
what the report keeps. On Windows the binary itself comes quoted (`"C:\\Program Files\\...\\ncu.exe"
--set full ...`): a first word in double quotes is read whole, its backslashes as written.
Which options take a value is ncu's own `--help` (2025.3.1: an option listed without `arg` is a
flag; tests/test_report_context.py checks these tables against the saved help text), so the first
word that is neither an option nor an option's value is the program.
"""

from __future__ import annotations

from typing import NamedTuple

# ncu 2025.3.1's options without a value, and its short names (`ncu --help`)
FLAGS = frozenset({
    "--help", "--version", "--forward-signals", "--call-stack", "--nvtx", "--support-32bit", "--null-stdin",
    "--list-sets", "--list-sections", "--section-folder-restore", "--list-rules", "--list-metrics",
    "--query-metrics", "--list-chips", "--disable-profiler-start-stop", "--quiet", "--verbose",
    "--disable-extra-suffixes", "--force-overwrite", "--open-in-ui", "--csv", "--print-metric-attribution",
    "--print-fp", "--print-rule-details"})
SHORT = {"-h": "--help", "-v": "--version", "-p": "--port", "-k": "--kernel-name", "-c": "--launch-count",
         "-s": "--launch-skip", "-o": "--export", "-f": "--force-overwrite", "-i": "--import"}


class NcuCommand(NamedTuple):
    """ncu's recorded command line, split into ncu's own words and the profiled program."""

    argv: tuple[str, ...]  # ncu's own words as recorded: the binary and its options, without the program
    options: tuple[tuple[str, str | None], ...]  # (long name, value; None for a flag), in order
    target: tuple[str, ...]  # the profiled program and its arguments; () for `--mode attach`

    def value(self, name: str) -> str | None:
        """The option's last value (ncu takes the last), None when it was not given."""
        return next((v for n, v in reversed(self.options) if n == name), None)


def _words(line: str) -> list[str]:
    """The recorded line's words: a quoted first word (a Windows binary path) whole, the rest split."""
    text = line.strip()
    if text.startswith('"') and '"' in text[1:]:
        end = text.index('"', 1)
        return [text[1:end], *text[end + 1:].split()]
    return text.split()


def parse(line: str) -> NcuCommand:
    words = _words(line)
    if not words:
        return NcuCommand((), (), ())
    options: list[tuple[str, str | None]] = []
    at = 1
    while at < len(words):
        word = words[at]
        if word == "--":
            at += 1
            break
        if not word.startswith("-"):
            break
        name, sep, inline = word.partition("=")
        name = SHORT.get(name, name)
        if sep:
            options.append((name, inline))
        elif name in FLAGS or at + 1 == len(words):
            options.append((name, None))
        else:
            at += 1
            options.append((name, words[at]))
        at += 1
    return NcuCommand(tuple(words[:at]), tuple(options), tuple(words[at:]))
