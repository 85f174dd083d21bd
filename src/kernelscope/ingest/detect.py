"""Tell a file's format from its bytes, never its name, and refuse a report that is not whole.

A `.ncu-rep` file is its magic, a u32 size and a FileHeader, then blocks: a u32 size, a BlockHeader
and the block's payload, PayloadSize bytes of u32-prefixed sources (a kernel's code) and results (a
launch). The BlockHeader's fields are those of ncu_report's own protobuf descriptor (NV.Profiler.
Messages.BlockHeader): NumSources 1, NumResults 2, SessionDetails 3, PayloadSize 5, NumRangeResults 7,
NumCmdlistResults 8, NumGraphResults 9.

ncu writes a block at a time as it profiles, and records no launch count and no closing block: a
report of a run stopped by SIGTERM, or of a program that launched fewer kernels than --launch-count,
ends as a whole one does (seen with ncu 2025.3.1). So a file cut exactly between two result blocks
is a shorter report that no reader can tell from a shorter capture. Every other cut is told here:
- a block that runs past the end of the file: cut inside a block (ncu_report then reads none of
  the report's launches, without complaint);
- a block whose payload does not hold the entries its header counts (ncu_report aborts the whole
  process on one that counts more);
- launches without ncu's session details: ncu 2020.3 to 2026.2 write them after the first launch
  (the target system's details, then, from about 2021, its own command line), the GUI before it, so
  a report whose launches come with no target-system details was cut before ncu finished writing
  the first launch (a report with no command line is whole: ncu 2020-2022.1 and the GUI record none);
- a last block holding a kernel's code without the launch that needs it, which ncu writes next.
A report in a bundle is also checked against the sha256 its manifest recorded (ingest/__init__.py).
"""

from __future__ import annotations

import io
import re
import struct
from collections.abc import Iterator
from typing import BinaryIO, NamedTuple

from ..errors import InputError

NCU_REP_MAGIC = b"NVR\x00"
GZIP_MAGIC = b"\x1f\x8b"

SOURCES, RESULTS, SESSION, PAYLOAD, PROCESS = 1, 2, 3, 5, 6  # BlockHeader fields
OTHER_RESULTS = (7, 8, 9)  # range, command list and graph results
TARGET_SYSTEM, COMMAND_LINE = 4, 11  # ReportSessionDetails: TargetSystemInfo (every version), ProfilerCmdline
HEADER_LIMIT = 64 << 20  # a block header holds counts and a string table of metric names: a few KB
CUT = "truncated or corrupt .ncu-rep"
LOG_LINE = re.compile(rb"==[A-Z]+==")  # ncu's log lines (==PROF==, ==WARNING==) as `ncu --csv` prints them


class Framing(NamedTuple):
    """What a whole report's blocks declare: its kernel launches and any other results, and what
    their headers record of the session (ingest/session.py reads it: the one walk of the blocks)."""

    results: int
    other_results: int
    sessions: tuple[bytes, ...] = ()  # the blocks' ReportSessionDetails, in order, those that have them
    processes: tuple[bytes, ...] = ()  # the blocks' ProcessInfo, each distinct one once, in order


class Block(NamedTuple):
    """One whole block of a report: where it ends and what its header counts."""

    end: int
    sources: int
    results: int
    other_results: int
    whole_session: bool  # its session details hold what ncu writes once the first launch is whole
    session: bytes = b""  # its ReportSessionDetails, as stored (ingest/session.py reads them)
    process: bytes = b""  # its ProcessInfo: the process whose launches the block holds


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]  # IndexError past the end: the caller's corrupt header
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80 or shift > 63:
            return value, at
        shift += 7


def message_fields(data: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value) of one protobuf message's top level; a varint's value is an int, any
    other field's its bytes. Raises IndexError or ValueError when the bytes are not a message."""
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        wire = key & 7
        value: int | bytes
        if wire == 0:
            value, at = _varint(data, at)
        else:
            size, at = _varint(data, at) if wire == 2 else ({1: 8, 5: 4}[wire], at)
            value, at = data[at:at + size], at + size
            if at > len(data):
                raise ValueError("field past the end of the message")
        yield key >> 3, value


def _fills(fh: BinaryIO, start: int, end: int, entries: int) -> bool:
    """Whether `entries` u32-prefixed entries fill the payload [start, end) exactly."""
    for _ in range(entries):
        fh.seek(start)
        prefix = fh.read(4)
        if len(prefix) < 4:
            return False
        start += 4 + struct.unpack("<I", prefix)[0]
    return start == end


def blocks(fh: BinaryIO, shown: str) -> Iterator[Block]:
    """The report's blocks in order, walked by their sizes and headers; a block that runs past the
    end of the file, has no readable header or does not hold the entries its header counts is an
    error. Only the blocks' sizes and headers are read, so a large report costs little."""
    size = fh.seek(0, io.SEEK_END)
    fh.seek(4)
    first = fh.read(4)
    if size < 8 or len(first) < 4:
        raise InputError(shown, f"{CUT} (shorter than its header)")
    pos, number = 8 + struct.unpack("<I", first)[0], 0
    while pos < size:
        number += 1
        fh.seek(pos)
        prefix = fh.read(4)
        header_size = struct.unpack("<I", prefix)[0] if len(prefix) == 4 else size
        if pos + 4 + header_size > size:
            raise InputError(shown, f"{CUT} (block {number} runs past the end of the file)")
        if header_size > HEADER_LIMIT:
            raise InputError(shown, f"{CUT} (block {number} has a {header_size:,}-byte header)")
        try:
            header: dict[int, int | bytes] = {}
            for field, value in message_fields(fh.read(header_size)):
                header.setdefault(field, value)
            session = header.get(SESSION, b"")
            whole_session = isinstance(session, bytes) and any(
                n in (TARGET_SYSTEM, COMMAND_LINE) for n, _ in message_fields(session))
        except (IndexError, ValueError, KeyError):
            raise InputError(shown, f"{CUT} (block {number} has no readable header)") from None
        counts = {n: v if isinstance(v, int) else 0 for n, v in header.items()}
        start, pos = pos + 4 + header_size, pos + 4 + header_size + counts.get(PAYLOAD, 0)
        if pos > size:
            raise InputError(shown, f"{CUT} (block {number} runs past the end of the file)")
        process = header.get(PROCESS, b"")
        block = Block(pos, counts.get(SOURCES, 0), counts.get(RESULTS, 0),
                      sum(counts.get(n, 0) for n in OTHER_RESULTS), whole_session,
                      session if isinstance(session, bytes) else b"", process if isinstance(process, bytes) else b"")
        entries = block.sources + block.results
        if not block.other_results and not _fills(fh, start, pos, entries):  # ncu_report aborts on a misfit
            raise InputError(shown, f"{CUT} (block {number} does not hold the {entries} entries its header counts)")
        yield block


def check_ncu_rep_framing(fh: BinaryIO, shown: str) -> Framing:
    """Refuse a report that is not whole (see the module's docstring); returns the launches and
    other results its blocks declare."""
    results = other = 0
    whole_session = False
    sessions: list[bytes] = []
    processes: dict[bytes, None] = {}
    last: Block | None = None
    for last in blocks(fh, shown):
        results += last.results
        other += last.other_results
        whole_session = whole_session or last.whole_session
        if last.session:
            sessions.append(last.session)
        processes.setdefault(last.process)
    if last is None:
        raise InputError(shown, f"{CUT} (it holds no blocks)")
    if results + other and not whole_session:
        raise InputError(shown, f"{CUT} (it holds launches but not the session details ncu writes after the "
                                "first one: the file was cut short)")
    if last.sources and not last.results and not last.other_results:
        raise InputError(shown, f"{CUT} (its last block holds a kernel's code but not the launch ncu writes "
                                "after it: the file was cut short)")
    return Framing(results, other, tuple(sessions), tuple(processes))


def sniff(head: bytes) -> str:
    """'ncu-rep', 'gzip', 'csv' or 'unknown' from a file's first bytes."""
    if head.startswith(NCU_REP_MAGIC):
        return "ncu-rep"
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    text = head.lstrip(b"\xef\xbb\xbf").lstrip()
    while LOG_LINE.match(text) and b"\n" in text:  # `ncu --csv` stdout: its log lines before the export
        text = text.split(b"\n", 1)[1].lstrip()
    if text.startswith(b'"') or b"," in text.split(b"\n", 1)[0]:
        return "csv"
    return "unknown"
