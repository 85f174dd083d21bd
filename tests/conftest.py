"""Shared fixtures: paths to the real ncu reports under tests/fixtures (see its README)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def fx() -> Path:
    return FIXTURES


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="session")
def chromium() -> str:
    """A real Chromium for the HTML checks, installed from Debian's packages when missing and we
    may (root with apt-get, as on CI); otherwise the browser tests skip and say why."""
    found = _chromium()
    if found is None and os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], env=env, capture_output=True, timeout=600)
        subprocess.run(["apt-get", "install", "-y", "-qq", "chromium"], env=env, capture_output=True, timeout=900)
        found = _chromium()
    if found is None:
        pytest.skip("no chromium on PATH and it could not be installed with apt-get")
    return found


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The counts the hostile-input issue asks for: inputs tried, clean errors, failures."""
    from hostile import TALLY

    if TALLY["tried"]:
        terminalreporter.write_line(
            f"hostile inputs: {TALLY['tried']} tried, {TALLY['clean']} clean errors, {TALLY['handled']} handled "
            f"with valid output, {TALLY['failures']} failures")
