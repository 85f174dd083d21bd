"""Number and unit parsing shared by the readers.

ncu scales a figure's unit per value in its CSV exports ("Kbyte" here, "Mbyte" there, "us", "Ghz"),
and ncu_report gives base units ("byte", "ns", "hz"): every value is taken to kernelscope's base
units (ns, byte, hz; per second for a rate) so that figures never depend on the file they came from.

Only the units ncu writes are known, spelled as it spells them: those the real exports and reports
under tests/fixtures hold, and ncu's older long time words (nsecond, usecond, msecond, second) and
its clocks as cycle/nsecond. A unit is a word or a word over a word, and a word is a time, a count
(inst, cycle, sector, ...) or byte or hz under one of the prefixes ncu puts on them (K, M, G, T, P).
Any other unit (`µs`, `minute`, `US`, `kbyte`, `KB`) is unknown: read as a base unit, a 35 µs
kernel would become 35 ns. The readers refuse an unknown unit on a figure they read (an error
naming the file, the figure and the unit) and pass over one on a figure they do not.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..model import in_range

TIME_NS = {"ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6, "s": 1e9, "second": 1e9}
_PREFIXES = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_SCALED = ("byte", "hz")  # the words ncu scales with a prefix: Kbyte, Mbyte, Ghz, Mhz
_COUNTS = frozenset({"%", "inst", "cycle", "warp", "sector", "sectors", "request", "block", "thread", "register",
                     "branches", "pass", "cluster", "SM", "sample"})


def _word(word: str) -> float | None:
    """The scale of one unit word to its base, per ns for a time; None for a word ncu does not write."""
    if word in _COUNTS:
        return 1.0
    if word in TIME_NS:
        return TIME_NS[word]
    for base in _SCALED:
        if word.endswith(base) and word[: -len(base)] in _PREFIXES:
            return _PREFIXES[word[: -len(base)]]
    return None


def unit_factor(unit: str) -> float | None:
    """The factor that takes a value in `unit` to kernelscope's base units (ns, byte, hz, and per
    second for a rate), or None when `unit` is not one ncu writes. No unit: a plain number."""
    if not unit:
        return 1.0
    num, slash, den = unit.partition("/")
    factor = _word(num)
    if not slash:
        return factor
    per = _word(den)  # a rate per time is per second: Gbyte/s -> byte/s, cycle/nsecond -> hz
    if factor is None or per is None or "/" in den:
        return None
    return factor / (per / 1e9 if den in TIME_NS else per)


def _kind(unit: str) -> str | None:
    """What a known unit measures (time, byte, hz, rate, percent), None for a count or a ratio."""
    num, slash, den = unit.partition("/")
    if slash:
        return "rate" if den in TIME_NS else None
    if num == "%":
        return "percent"
    if num in TIME_NS:
        return "time"
    return next((base for base in _SCALED if num.endswith(base)), None)


def _wants(name: str) -> frozenset[str] | None:
    """The kinds of unit a counter's name allows (ncu names its times, sizes, rates and shares so), None
    when the name does not say."""
    if ".pct" in name or name.endswith("_pct"):  # dram__bytes_read.sum.pct_of_peak_sustained_elapsed: a share
        return frozenset({"percent"})
    if name.endswith(".per_second"):
        return frozenset({"rate", "hz"})
    if "time_duration" in name:
        return frozenset({"time"})
    if "bytes" in name and name.split(".")[-1] in ("sum", "avg", "max", "min"):  # not bytes a cycle or a sector
        return frozenset({"byte"})
    return None


def misfit(name: str, unit: str) -> str | None:
    """The problem with a known unit of the wrong kind for its counter (a duration in `byte`, DRAM
    bytes in `us`, a percentage in `cycle`): scaled by it, the figure would be made up. None when it
    fits, or when the name or a blank unit does not say."""
    wants = _wants(name)
    if wants is None or not unit or _kind(unit) in wants:
        return None
    return (f"{name} is in {unit!r}, a unit of another kind than its counter's ({' or '.join(sorted(wants))}): "
            "refused rather than scaled by it")


def needs_unit(name: str) -> bool:
    """A time, size or rate counter: ncu always writes its unit, so a blank one is a damaged file,
    not a plain number (read as a base unit, a 35 µs kernel would become 35 ns)."""
    return "time_duration" in name or "bytes" in name or name.endswith(".per_second")


def blank_unit(figure: str) -> str:
    """The problem a blank unit on a time, size or rate figure is refused with."""
    return f"{figure} has no unit, and a time, size or rate has one in every ncu export (refused rather than guessed)"


def unknown(figure: str, unit: str) -> str:
    """The problem an unknown unit on a figure that is read is refused with."""
    return f"{figure} is in {unit!r}, a unit ncu does not write (refused rather than read as a base unit)"


# A number as ncu writes it: thousands separators group three digits ("548,099"); a comma anywhere else
# is another locale's decimal comma ("35,264000" µs, "35,26"), and Python's digit underscores ("35_264")
# are no ncu form: both are refused rather than read as some other number.
GROUPED = re.compile(r"[-+]?\d{1,3}(,\d{3})+(\.\d*)?([eE][-+]?\d+)?")


class MalformedNumber(ValueError):
    """A field that holds a number in a form ncu does not write: the reader names its line and column."""

    def __init__(self, text: str) -> None:
        super().__init__(f"{text!r:.40} is not a number as ncu writes it (ASCII digits; thousands separators group "
                         "three digits; no decimal comma, no underscores)")


def number(text: str) -> float | None:
    """'548,099' -> 548099.0; '' / 'n/a' / text -> None; '35,26' or '35_264' -> MalformedNumber. Any
    float, in range or not (see parse_number). The plain case is one float() call: ingest parses ~90
    of these per launch."""
    if "_" not in text and text.isascii():
        try:
            return float(text)
        except ValueError:
            pass
    stripped = text.strip()
    if not stripped.isascii():  # float() reads any script's digits (٣٥, ３５): ncu writes ASCII ones
        if _numeric(stripped):
            raise MalformedNumber(text)
        return None
    if not stripped or stripped.lower() in {"n/a", "na", "nan", "-"}:
        return None
    if "_" in stripped and _numeric(stripped.replace("_", "")):
        raise MalformedNumber(text)
    if "," in stripped:
        if not GROUPED.fullmatch(stripped):
            if _numeric(stripped.replace(",", "")):
                raise MalformedNumber(text)
            return None
        return float(stripped.replace(",", ""))
    return None


def _numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


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
