"""Quantities as a verdict's or a lever's text says them, one way wherever they appear."""

from __future__ import annotations


def size(n: float) -> str:
    """A byte count in the unit that keeps its digits: 52 MB, 1.6 MB, 180 KB (never '0 MB')."""
    return f"{n / 1e6:,.0f} MB" if n >= 10e6 else f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.0f} KB"
