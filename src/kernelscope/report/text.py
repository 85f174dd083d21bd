"""Strings from reports made safe and short for people: control sequences removed (a kernel name
is data, never a command to the terminal), long names elided in the middle so the tail — where
GEMM names carry their tile shape (`..._256x128_64x4_1x2_h_bz_coopA_NNT`) — stays readable."""

from __future__ import annotations

import re

ELLIPSIS = "…"
# ESC-introduced sequences: CSI (colours, cursor moves), OSC (titles, hyperlinks; ended by BEL or ST),
# DCS/SOS/PM/APC strings, and two-character escapes. C1 forms (0x9b CSI, 0x9d OSC) likewise.
_SEQUENCES = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?"
)
# What is left that a terminal or editor would act on: C0/C1 controls, DEL, and the bidirectional
# overrides that make text display in an order other than the one it has ("trojan source").
_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def clean(value: object) -> str:
    """One line of inert text: escape sequences dropped, other control characters as spaces."""
    text = str(value)
    if text.isprintable():  # the common case, and the fast one
        return text
    return _CONTROLS.sub(" ", _SEQUENCES.sub("", text))


def elide(text: str, width: int) -> str:
    """`text` in at most `width` characters, cut in the middle (more of the tail than the head)."""
    if len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    head = (width - 1) * 2 // 5
    tail = width - 1 - head
    return text[:head] + ELLIPSIS + text[len(text) - tail:]
