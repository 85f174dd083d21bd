"""Write `kernel_internals` into a bundle's inference_perfbench_v1.json, leaving every other key
byte-for-byte as it was (the file belongs to another tool; we splice, we do not re-serialise)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..analysis.groups import group
from ..columns import PERFBENCH_V1, kernel_object
from ..errors import InputError
from ..files import parse_json, read_text, write_file
from ..model import Assessment

FILE = "inference_perfbench_v1.json"
KEY = "kernel_internals"


def block(items: Sequence[Assessment], method: str, tool: str) -> dict[str, Any]:
    """The schema's own key names, each taken from the column it maps to (columns.PERFBENCH_V1),
    one entry a kernel keyed by its full name: two instantiations of one template (clamp and mul
    through vectorized_elementwise_kernel) are two kernels, each with its own figures, those of
    its representative launch (analysis.groups), as analyze's table shows them."""
    per_kernel = {}
    for g in group(items, across_reports=True):
        obj = kernel_object(g.representative)
        per_kernel[g.name_full] = {theirs: obj[ours] for theirs, ours in PERFBENCH_V1.items()}
    return {"captured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "method": method,
            "tool_version": tool, "per_kernel": per_kernel}


def _top_level_spans(text: str, path: Path) -> tuple[dict[str, tuple[int, int]], int]:
    """key -> (start, end) of its value in `text`, and the index of the closing brace."""
    decoder = json.JSONDecoder()
    i = text.index("{") + 1
    spans: dict[str, tuple[int, int]] = {}
    while True:
        while text[i].isspace() or text[i] == ",":
            i += 1
        if text[i] == "}":
            return spans, i
        key, i = decoder.raw_decode(text, i)
        while text[i].isspace() or text[i] == ":":
            i += 1
        start = i
        _, i = decoder.raw_decode(text, i)
        spans[key] = (start, i)


def merge(text: str | None, value: dict[str, Any], path: Path) -> str:
    rendered = json.dumps(value, indent=2).replace("\n", "\n  ")  # nested one level, as a top-level key's value
    if text is None:
        return json.dumps({KEY: value}, indent=2) + "\n"
    if not isinstance(parse_json(text, path, FILE), dict):  # parsed whole first: the spans' decoder recurses too
        raise InputError(path, "top level is not a JSON object")
    try:
        spans, close = _top_level_spans(text, path)
    except (ValueError, IndexError) as exc:
        raise InputError(path, f"not valid JSON ({exc})") from exc
    if KEY in spans:
        start, end = spans[KEY]
        return text[:start] + rendered + text[end:]
    body = text[:close].rstrip()
    sep = "" if body.endswith("{") else ","
    return body + f'{sep}\n  "{KEY}": ' + rendered + "\n" + text[close:]


def prepare(bundle: Path, items: Sequence[Assessment], method: str, tool: str) -> tuple[Path, str]:
    """The bundle's inference_perfbench_v1.json with its kernel_internals block, not yet written: every
    bundle's is made (and its existing file read and checked) before any is written."""
    path = bundle / FILE
    text = read_text(path, what="inference_perfbench_v1.json") if path.exists() else None
    return path, merge(text, block(items, method, tool), path)


def write(bundle: Path, items: Sequence[Assessment], method: str, tool: str) -> Path:
    path, text = prepare(bundle, items, method, tool)
    return write_file(text, path)
