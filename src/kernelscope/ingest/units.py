"""Number and unit parsing shared by the CSV readers.

ncu scales units per value ("Kbyte" here, "Gbyte" there, "us" or "ms"); we convert every value
to the base unit so that figures never depend on which file they came from.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..model import in_range

_SI = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_TIME_NS = {
    "ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6,
    "s": 1e9, "second": 1e9,
}
_FREQ_HZ = {"hz": 1.0, "khz": 1e3, "mhz": 1e6, "ghz": 1e9}


def _factor(part: str) -> float:
    """Scale of one unit word (no '/'): Kbyte -> 1e3, us -> 1e3 (ns), Ghz -> 1e9 (hz)."""
    if part in _TIME_NS:
        return _TIME_NS[part]
    if part.lower() in _FREQ_HZ:
        return _FREQ_HZ[part.lower()]
    for base in ("byte", "bytes"):
        if part.endswith(base) and part[: -len(base)] in _SI:
            return _SI[part[: -len(base)]]
    return 1.0


def unit_factor(unit: str) -> float:
    """Factor that takes a value in `unit` to kernelscope's base units (ns, byte, 1/s, hz)."""
    unit = unit.strip()
    if not unit:
        return 1.0
    num, _, den = unit.partition("/")
    factor = _factor(num)
    if den:
        # a rate per time: "Gbyte/s" -> byte per second, so divide by the time unit in seconds
        den_scale = _TIME_NS.get(den)
        factor /= (den_scale / 1e9) if den_scale else _factor(den)
    return factor


def number(text: str) -> float | None:
    """'548,099' -> 548099.0; '' / 'n/a' / text -> None. Any float, in range or not (see parse_number).
    The plain case is one float() call: ingest parses ~90 of these per launch."""
    try:
        return float(text)
    except ValueError:
        text = text.strip().replace(",", "")
        if not text or text.lower() in {"n/a", "na", "nan", "-"}:
            return None
        try:
            return float(text)
        except ValueError:
            return None


def parse_number(text: str) -> float | None:
    """A number as `number` reads it, None when it is out of range (model.in_range: non-finite,
    absurd or subnormal): not a measured number."""
    value = number(text)
    return value if value is not None and in_range(value) else None


def in_range_of(names: Sequence[str], raw: Sequence[float], scaled: Sequence[float]
                ) -> tuple[dict[str, float], tuple[str, ...]]:
    """Counters by name in base units, those in range (model.in_range) as stored and as scaled; and
    the names of the others, which are left out: corrupt values, read as not collected."""
    kept = {n: v for n, r, v in zip(names, raw, scaled, strict=True) if in_range(r) and in_range(v)}
    return kept, tuple(n for n in names if n not in kept)
