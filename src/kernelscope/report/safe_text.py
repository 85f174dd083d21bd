"""Strings from reports made safe and short for people: control sequences removed (a kernel name
is data, never a command to the terminal), long names elided in the middle so the tail — where
GEMM names carry their tile shape (`..._256x128_64x4_1x2_h_bz_coopA_NNT`) — stays readable."""

from __future__ import annotations

import re

ELLIPSIS = "…"
# _SEQUENCES, _CONTROLS and _BUT_LAYOUT are compiled at their first use, by re's own cache: only text
# that is not printable needs them, and compiling them cost every start-up ~1 ms.
# ESC-introduced sequences: CSI (colours, cursor moves), OSC (titles, hyperlinks; ended by BEL or ST),
# DCS/SOS/PM/APC strings, and two-character escapes. C1 forms (0x9b CSI, 0x9d OSC) likewise.
_SEQUENCES = (
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?"
)
# What is left that a terminal or editor would act on: C0/C1 controls, DEL, the bidirectional
# overrides that make text display in an order other than the one it has ("trojan source"), and the
# invisible ones that make two names look alike (zero-width space and joiners, marks, word joiner,
# BOM) or break a line where none shows (U+2028/2029). JSON escapes C0 by itself; the others it
# writes raw unless asked for ASCII.
_NOT_C0 = r"\x7f-\x9f\u202a-\u202e\u2066-\u2069"
_INVISIBLE = r"\u200b-\u200f\u2028\u2029\u2060-\u2064\ufeff"  # shown blank; kept in data (emoji ZWJ, Persian ZWNJ)
_CONTROLS = rf"[\x00-\x1f{_NOT_C0}{_INVISIBLE}]"
_BUT_LAYOUT = rf"[\x00-\x08\x0b\x0c\x0e-\x1f{_NOT_C0}]"  # a CSV field's data: tab, LF, CR and the invisible kept
_RAW_IN_JSON = re.compile(f"[{_NOT_C0}{_INVISIBLE}]")
# what _RAW_IN_JSON finds (_NOT_C0's code points) as UTF-8, and the bytes they start with
_RAW_IN_UTF8 = tuple(chr(c).encode() for c in (*range(0x7F, 0xA0), *range(0x200B, 0x2010), 0x2028, 0x2029,
                                                *range(0x202A, 0x202F), *range(0x2060, 0x2065), *range(0x2066, 0x206A),
                                                0xFEFF))
_RAW_LEADS = tuple(sorted({raw[:1] for raw in _RAW_IN_UTF8}))


def clean(value: object, layout: bool = False) -> str:
    """One line of inert text: escape sequences dropped, other control characters and the invisible
    ones as spaces; `layout`: tab, LF, CR and the invisible ones kept (a quoted CSV field's data,
    which a reader must get back as written)."""
    text = str(value)
    if text.isprintable():  # the common case, and the fast one
        return text
    return re.sub(_BUT_LAYOUT if layout else _CONTROLS, " ", re.sub(_SEQUENCES, "", text))


def has_controls(text: str) -> bool:
    """Whether `clean` would change the text."""
    return not text.isprintable() and re.search(_CONTROLS, text) is not None


def json_inert(data: bytes) -> bytes:
    """JSON text (UTF-8) with DEL, the C1 controls (a terminal reads U+009B as CSI) and the bidi
    overrides written as \\u escapes, as json.dumps's ASCII output has them; orjson writes them raw.
    Outside its strings JSON text holds none, so each one found is inside a string."""
    if not _may_hold_raw(data):  # the common case
        return data
    text = data.decode("utf-8", "surrogatepass")
    if not _RAW_IN_JSON.search(text):
        return data
    return _RAW_IN_JSON.sub(lambda m: f"\\u{ord(m[0]):04x}", text).encode("utf-8", "surrogatepass")


def _may_hold_raw(data: bytes) -> bool:
    """Whether UTF-8 text holds what _RAW_IN_JSON finds, by byte scans in C (~2 µs over a launch's
    object, where the regex over its decoded text takes ~50: a note's dash makes it non-ASCII)."""
    for lead in _RAW_LEADS:
        at = data.find(lead)
        while at >= 0:
            if data.startswith(_RAW_IN_UTF8, at):
                return True
            at = data.find(lead, at + 1)
    return False


def elide(text: str, width: int) -> str:
    """`text` in at most `width` characters, cut in the middle (more of the tail than the head)."""
    if len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    head = (width - 1) * 2 // 5
    tail = width - 1 - head
    return text[:head] + ELLIPSIS + text[len(text) - tail:]
