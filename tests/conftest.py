"""Shared fixtures: paths to the real ncu reports under tests/fixtures (see its README)."""

from __future__ import annotations

import os
import shutil
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
    """A real Chromium for the HTML checks. A test run never installs system packages: without one
    on PATH the browser tests skip and say how to run them."""
    found = _chromium()
    if found is None:
        pytest.skip("no chromium on PATH: install it (Debian: apt-get install chromium) to run the browser tests")
    return found


def raw_csv_variant(src: Path, dst: Path, name: str | None = None, duration_factor: float = 1.0,
                    copies: int = 1) -> Path:
    """A copy of a real `--page raw` CSV export with its kernel renamed, its duration scaled or its
    rows replicated (distinct IDs; `{i}` in `name` numbers the copies): the figures stay real."""
    import csv

    with src.open(newline="") as fh:
        header, units, *rows = list(csv.reader(fh))
    at = {h: i for i, h in enumerate(header)}
    out = []
    for i in range(copies):
        for row in rows:
            row = list(row)
            row[at["ID"]] = str(len(out))
            if name is not None:
                row[at["Kernel Name"]] = name.replace("{i}", str(i))
            t = at["gpu__time_duration.sum"]
            row[t] = f"{float(row[t].replace(',', '')) * duration_factor:.6f}"
            out.append(row)
    with dst.open("w", newline="") as fh:
        csv.writer(fh, quoting=csv.QUOTE_ALL).writerows([header, units, *out])
    return dst


@pytest.fixture(scope="session")
def variant() -> object:
    return raw_csv_variant


SETS_ARCHIVE = FIXTURES / "sets.tar.xz"


@pytest.fixture(scope="session")
def sets_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The capture-set fixtures (tests/fixtures/README.md, "Capture sets"), unpacked once: the same
    kernels captured by every set a user might have used. One archive, since the reports of one set
    share the embedded code of their kernels (1.7 MB as one xz archive, 24 MB as separate gzips)."""
    import tarfile

    out = tmp_path_factory.mktemp("sets")
    safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}  # Python 3.11.2 has no filters
    with tarfile.open(SETS_ARCHIVE) as tar:
        tar.extractall(out, **safe)  # type: ignore[arg-type]
    return out


GOLDEN = Path(__file__).parent / "golden"


def check_golden(name: str, text: str) -> None:
    """`text` equals tests/golden/NAME (KERNELSCOPE_GOLDEN=write pytest ... rewrites the files)."""
    path = GOLDEN / name
    if os.environ.get("KERNELSCOPE_GOLDEN") == "write":
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert text == path.read_text(), f"{path} differs; review, then rewrite with KERNELSCOPE_GOLDEN=write"


@pytest.fixture(scope="session")
def golden() -> object:
    return check_golden


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The counts the hostile-input issue asks for: inputs tried, clean errors, failures."""
    from hostile import BY_CLASS, TALLY

    if TALLY["tried"]:
        terminalreporter.write_line(
            f"hostile inputs: {TALLY['tried']} tried, {TALLY['clean']} clean errors, {TALLY['handled']} handled "
            f"with valid output, {TALLY['failures']} failures")
        for klass, n in sorted(BY_CLASS.items()):
            terminalreporter.write_line(f"  {n:6d}  {klass}")
