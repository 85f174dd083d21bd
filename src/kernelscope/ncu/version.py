"""Which ncu is on this machine, and which flags it has.

Flags are checked against the binary's own `ncu --help`, not a table of guesses: a flag missing
from that text is one this version lacks (ncu 2026.x dropped `--attach PID`; kernelscope never
emits it and attaches with `--mode attach --hostname H --port P`).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass

from ..errors import KernelscopeError


@dataclass(frozen=True)
class NcuInfo:
    path: str
    version: str  # e.g. "2025.3.1.0"
    help_text: str


def parse_version(text: str) -> str:
    m = re.search(r"Version (\d{4}\.\d+(?:\.\d+)*)", text)
    if not m:
        raise KernelscopeError(f"cannot read an ncu version from: {text.strip()[:120]!r}")
    return m.group(1)


def probe(ncu: str) -> NcuInfo:
    """Ask the binary itself (two quick calls, no GPU work)."""
    try:
        ver = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60)
        helptext = subprocess.run([ncu, "--help"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise KernelscopeError(f"{ncu}: cannot run ncu ({exc})") from exc
    return NcuInfo(ncu, parse_version(ver.stdout + ver.stderr), helptext.stdout + helptext.stderr)


def unsupported_flags(options: list[str], help_text: str) -> list[str]:
    """Long options among ncu's own `options` (the argv before the program) that this ncu's
    --help does not list."""
    known = set(re.findall(r"--[a-z0-9][a-z0-9-]*", help_text))
    flags = (arg.split("=", 1)[0] for arg in options if arg.startswith("--"))
    return [flag for flag in flags if flag not in known]
