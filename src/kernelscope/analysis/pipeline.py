"""The analysis facade: inputs -> records -> assessments, with kernel selection."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..ceilings import CeilingsFile
from ..ceilings import load as load_ceilings
from ..errors import KernelscopeError
from ..ingest import read_inputs
from ..model import Assessment, KernelRecord
from .derive import derive
from .verdict import assess


def kernel_matcher(pattern: str | None) -> re.Pattern[str] | str | None:
    """ncu's own convention: `regex:EXPR` searches, anything else must equal the name."""
    if pattern is None:
        return None
    if pattern.startswith("regex:"):
        try:
            return re.compile(pattern[len("regex:"):])
        except re.error as exc:
            raise KernelscopeError(f"--kernel {pattern!r}: bad regular expression ({exc})") from exc
    return pattern


def selected(rec: KernelRecord, matcher: re.Pattern[str] | str | None) -> bool:
    if matcher is None:
        return True
    if isinstance(matcher, str):
        return matcher in (rec.name, rec.name_full)
    return bool(matcher.search(rec.name) or matcher.search(rec.name_full))


def load(paths: str | Sequence[str], kernel: str | None = None) -> list[KernelRecord]:
    """Every profiled launch in the inputs as a KernelRecord (no ceilings needed)."""
    matcher = kernel_matcher(kernel)
    items = [paths] if isinstance(paths, str) else list(paths)
    return [r for r in map(derive, read_inputs(items)) if selected(r, matcher)]


def analyze(
    paths: str | Sequence[str],
    kernel: str | None = None,
    hw: str | None = None,
    ceilings: str | None = None,
) -> tuple[list[Assessment], CeilingsFile]:
    """Records placed against the ceilings of their device (or of `hw` for all of them)."""
    table = load_ceilings(ceilings)
    records = load(paths, kernel)
    return [assess(r, table.pick(r.device, hw)) for r in records], table
