"""Colours, decided once for every output. Verdict (bound) colours on a terminal, by ANSI name."""

from __future__ import annotations

BOUND_ANSI = {"compute": "red", "memory": "blue", "latency": "yellow", "unmeasured": "grey"}
