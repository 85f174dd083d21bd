"""Campaigns as plain files: <root>/<slug>/config.yaml and <root>/<slug>/cells/<cell-id>/.

Slugs and cell ids are names, never paths: letters, digits, '.', '_' and '-', no '..'.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from ..errors import InputError, KernelscopeError
from ..files import load_yaml, read_text, write_file

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
CELL_FILE = "ncu_kernels.json"


def check_name(kind: str, value: str) -> str:
    if not NAME.fullmatch(value) or ".." in value:
        raise KernelscopeError(f"{kind} {value!r}: use letters, digits, '.', '_' and '-' only (no '/', no '..')")
    return value


def campaign_dir(root: Path, slug: str) -> Path:
    return root / check_name("campaign", slug)


def cell_dir(root: Path, slug: str, cell_id: str) -> Path:
    return campaign_dir(root, slug) / "cells" / check_name("cell id", cell_id)


def read_config(path: Path) -> dict[str, Any]:
    doc = load_yaml(path, "campaign config") or {}
    if not isinstance(doc, dict):
        raise InputError(path, "campaign config must be a YAML map")
    return doc


def load_config(root: Path, slug: str) -> dict[str, Any]:
    path = campaign_dir(root, slug) / "config.yaml"
    if not path.exists():
        raise KernelscopeError(f"{path}: no such campaign (import a cell first, or write its config.yaml)")
    return read_config(path)


def ensure_config(root: Path, slug: str) -> Path:
    """A new campaign gets a config whose context fields say unknown until someone fills them."""
    path = campaign_dir(root, slug) / "config.yaml"
    if not path.exists():
        fields = ("model", "hardware", "quantisation", "parallelism", "serving_config", "workload")
        doc: dict[str, Any] = {"slug": slug, "context": dict.fromkeys(fields), "focus": None, "comparisons": [],
                               "claims": []}
        write_file(yaml.safe_dump(doc, sort_keys=False), path)
    return path


def cells(root: Path, slug: str) -> dict[str, dict[str, Any]]:
    """cell id -> its ncu_kernels.json document, in id order."""
    base = campaign_dir(root, slug) / "cells"
    found = {}
    for path in sorted(base.glob(f"*/{CELL_FILE}")):
        if path.parent.name.startswith("."):  # staging or a cell moved aside: not a cell
            continue
        try:
            found[path.parent.name] = json.loads(read_text(path, what="campaign cell"))
        except ValueError as exc:
            raise InputError(path, f"not valid JSON ({exc})") from exc
    return found
