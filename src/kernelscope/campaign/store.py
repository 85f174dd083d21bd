"""Campaigns as plain files: <root>/<slug>/config.yaml and <root>/<slug>/cells/<cell-id>/.

Slugs and cell ids are names, never paths: letters, digits, '.', '_' and '-', no '..'. No link
inside a campaign is followed (`in_campaign`): a cells folder, cell, cell file or config that
points elsewhere would be read, written or moved as if it were the campaign's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..columns import assessment
from ..errors import InputError, KernelscopeError
from ..files import load_json, load_yaml, write_file
from ..typed import TypeProblem


@dataclass(frozen=True)
class ConfigField:
    """One field of a campaign's config.yaml: what it holds, who reads it, what it means, and whether
    the first import writes it (as `empty`). docs/reference.md's table is generated from these."""

    name: str
    holds: str
    read_by: str
    meaning: str
    writes: bool = True
    empty: Any = None


# the context fields the first import writes, each null until someone fills it
CONTEXT_FIELDS = ("model", "hardware", "quantisation", "parallelism", "serving_config", "workload")
CONFIG_FIELDS: tuple[ConfigField, ...] = (
    ConfigField("slug", "text", "nothing", "the campaign's name, written by the first import"),
    ConfigField("context", "map of field: text (no maps or lists); the first import writes "
                + ", ".join(f"`{f}`" for f in CONTEXT_FIELDS) + ", all null",
                "render (the HTML header; a command line in it is masked as every command is), export "
                "(`context_<field>` columns), check (`model`, where a cell's manifest does not record one)",
                "what the campaign measured; any other field is kept and exported too",
                empty=dict.fromkeys(CONTEXT_FIELDS)),
    ConfigField("focus", "anything", "nothing", "the team's note of what the campaign is after"),
    ConfigField("krhpa", "map: `candidate` and `baseline`, each `name` (non-empty text) and `K`, `R`, `H`, `P`, `A` "
                "(integers 1..4; booleans are not integers)", "check",
                "required (checked) in an L4 campaign; see [Glossary](#glossary)", writes=False),
    ConfigField("comparisons", "list of maps, each `baseline` and `candidate` (cell ids, text)", "check",
                "pairs whose arms must share device (`hw_key`, GPU name), metric set, model and shapes", empty=[]),
    ConfigField("claims", "list of maps, each `cell` (a cell id, text) and optionally `pct_sol` (a number, not a "
                "boolean)", "check", "a claimed roof % for a cell; it must rest on measured kernels. kernelscope "
                "does not compare the number with the cell's figures", empty=[]),
)
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
CELL_FILE = "ncu_kernels.json"
CELL_LIMIT = 256 << 20  # bytes of one ncu_kernels.json: ~13 KB a launch, so some 20,000 launches


def check_name(kind: str, value: str) -> str:
    if not isinstance(value, str) or not NAME.fullmatch(value) or ".." in value:
        raise KernelscopeError(f"{kind} {value!r:.120}: use letters, digits, '.', '_' and '-' only (no '/', no '..')")
    return value


def campaign_dir(root: Path, slug: str) -> Path:
    return root / check_name("campaign", slug)


def in_campaign(root: Path, slug: str, *parts: str) -> Path:
    """A path inside the campaign, reached through no link (the campaign directory itself may be
    a link its user made; nothing under it is followed)."""
    here = campaign_dir(root, slug)
    for part in parts:
        here = here / part
        if here.is_symlink():
            raise InputError(here, "a link inside the campaign: kernelscope follows no link in a campaign")
    return here


def cell_dir(root: Path, slug: str, cell_id: str) -> Path:
    return in_campaign(root, slug, "cells", check_name("cell id", cell_id))


def read_config(path: Path) -> dict[str, Any]:
    """A campaign config, its fields type-checked (the gates and the report read them blindly)."""
    doc = load_yaml(path, "campaign config") or {}
    if not isinstance(doc, dict):
        raise InputError(path, "campaign config must be a YAML map")
    context = doc.get("context") or {}
    if not isinstance(context, dict) or any(isinstance(v, (dict, list)) for v in context.values()):
        raise InputError(path, "campaign config: context must be a map of field: text")
    for key, fields in (("comparisons", ("baseline", "candidate")), ("claims", ("cell",))):
        entries = doc.get(key) or []
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise InputError(path, f"campaign config: {key} must be a list of maps")
        for e in entries:
            if any(not isinstance(e.get(f), str) for f in fields):
                raise InputError(path, f"campaign config: each of {key} needs {' and '.join(fields)} (cell ids)")
            if key == "claims" and "pct_sol" in e and (isinstance(e["pct_sol"], bool)
                                                       or not isinstance(e["pct_sol"], (int, float))):
                raise InputError(path, f"campaign config: claims' pct_sol must be a number, got {e['pct_sol']!r:.40}")
    return doc


def load_config(root: Path, slug: str) -> dict[str, Any]:
    path = in_campaign(root, slug, "config.yaml")
    if not path.exists():
        raise KernelscopeError(f"{path}: no such campaign (import a cell first, or write its config.yaml)")
    return read_config(path)


def ensure_config(root: Path, slug: str) -> Path:
    """A new campaign gets a config whose context fields say unknown until someone fills them."""
    path = in_campaign(root, slug, "config.yaml")
    if not path.exists():
        doc = {**{f.name: f.empty for f in CONFIG_FIELDS if f.writes}, "slug": slug}
        write_file(yaml.safe_dump(doc, sort_keys=False), path)
    return path


def cells(root: Path, slug: str) -> dict[str, dict[str, Any]]:
    """cell id -> its ncu_kernels.json document, checked, in id order (hidden folders are not cells)."""
    base = in_campaign(root, slug, "cells")
    found = {}
    for path in sorted(base.glob(f"*/{CELL_FILE}")):
        cell_id = path.parent.name
        if not cell_id.startswith("."):  # staging or a cell moved aside: not a cell
            found[cell_id] = read_cell(in_campaign(root, slug, "cells", cell_id, CELL_FILE))
    return found


def read_cell(path: Path) -> dict[str, Any]:
    """One cell document; every kernel must be a valid kernel object of the column spec."""
    doc = load_json(path, "campaign cell", CELL_LIMIT)
    if not isinstance(doc, dict) or not isinstance(doc.get("kernels"), list):
        raise InputError(path, "campaign cell: not a map with a kernels list")
    for key in ("campaign", "cell_id", "hw_key"):
        if not isinstance(doc.get(key), str):
            raise InputError(path, f"campaign cell: {key} must be text, got {doc.get(key)!r:.40}")
    sources = doc.get("captured_sources", [])
    if not isinstance(sources, list) or not all(isinstance(s, dict) for s in sources):
        raise InputError(path, "campaign cell: captured_sources must be a list of maps")
    try:
        doc["items"] = [assessment(k, f"kernels[{i}]") for i, k in enumerate(doc["kernels"])]
    except TypeProblem as exc:
        raise InputError(path, f"campaign cell: {exc}") from exc
    return doc
