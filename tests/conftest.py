"""Shared fixtures: paths to the real ncu reports under tests/fixtures (see its README)."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def fx() -> Path:
    return FIXTURES
