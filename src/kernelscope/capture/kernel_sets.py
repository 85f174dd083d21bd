"""Kernel sets: named lists of a platform's usual hot kernels (package data, one YAML table)."""

from __future__ import annotations

from importlib import resources
from typing import Any

import yaml

from ..errors import KernelscopeError


def load() -> dict[str, list[dict[str, Any]]]:
    doc: dict[str, list[dict[str, Any]]] = yaml.safe_load(resources.files(__package__).joinpath("kernel_sets.yaml")
                                                          .read_text())
    return doc


def kernels(name: str) -> tuple[str, ...]:
    sets = load()
    if name not in sets:
        raise KernelscopeError(f"--kernel-set {name!r}: known sets are {', '.join(sorted(sets))}")
    return tuple(entry["kernel"] for entry in sets[name])
