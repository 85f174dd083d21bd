"""Results as documents: the JSON document (context, units, kernels, frontier) and flat CSV, both
from the one column spec (kernelscope/columns.py)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..analysis.frontier import frontier
from ..columns import SCHEMA_VERSION, UNITS, flatten, kernel_object
from ..model import Assessment


def document(items: Sequence[Assessment], context: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "context": dict(context),
        "units": UNITS,
        "kernels": [kernel_object(a) for a in items],
        "frontier": [vars(f).copy() for f in frontier(items)],  # plain fields: no deep copy
    }


def to_json(items: Sequence[Assessment], context: Mapping[str, Any]) -> str:
    """Compact JSON: an indent makes json use its pure-Python encoder, ~15x slower (pipe to jq to read)."""
    return json.dumps(document(items, context), allow_nan=False) + "\n"


def to_csv(items: Sequence[Assessment]) -> str:
    rows = [flatten(kernel_object(a)) for a in items]
    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(columns), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()
