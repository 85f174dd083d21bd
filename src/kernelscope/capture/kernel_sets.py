"""Kernel sets: named lists of a platform's usual hot kernels (package data, one YAML table)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import KernelscopeError
from ..files import parse_packaged_yaml


def load() -> dict[str, list[dict[str, Any]]]:
    doc: dict[str, list[dict[str, Any]]] = parse_packaged_yaml(Path(__file__).with_name("kernel_sets.yaml"))
    return doc


def kernels(name: str) -> tuple[str, ...]:
    sets = load()
    if name not in sets:
        raise KernelscopeError(f"--kernel-set {name!r}: known sets are {', '.join(sorted(sets))}")
    return tuple(entry["kernel"] for entry in sets[name])
