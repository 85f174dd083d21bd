"""What a `.ncu-rep` records of the session that wrote it, which the official ncu_report module
does not expose (its IContext has ranges and actions only; `get_version()` is the module's own
version, not the report's): ncu's version, its command line, the profiled processes, the machine
and when. ncu stores them in the blocks' headers (BlockHeader.SessionDetails, a
ReportSessionDetails, spread over several blocks; BlockHeader.Process), whose field numbers are
those of ncu_report's own protobuf descriptor (NV.Profiler.Messages):

    ReportSessionDetails: CreationTime 2 (Unix seconds), HostSystemInfo 3, TargetSystemInfo 4,
        VersionInfo 8 (repeated: Provider 1, Version 2), ProfilerCmdline 11
    SystemInfo: ComputerName 5      ProcessInfo: ProcessID 1, Hostname 2, ProcessName 3

ncu 2025.3.1 leaves ReportSessionDetails' ExecutableSettings and ProfilerSettings (environment,
clock-control mode, sections) unwritten on the command line, so they are read from its command
line (ncu/cmdline.py) and from the launches (ingest/ncu_rep.py), never guessed. A field the
report does not hold stays None.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import NamedTuple

from .detect import Framing, message_fields

CREATED, HOST, TARGET, VERSIONS, COMMAND_LINE = 2, 3, 4, 8, 11  # ReportSessionDetails
COMPUTER = 5  # SystemInfo.ComputerName
PID, PROCESS_NAME = 1, 3  # ProcessInfo
NCU = "Nsight Compute Target"  # the VersionInfo provider of the ncu that profiled
CUDA = "CUDA Version"


class Session(NamedTuple):
    """What a report records of the ncu session that wrote it; None or () where it records none."""

    ncu_version: str | None = None  # "2025.3.1.0"
    cuda_version: str | None = None  # the driver's CUDA version, "13.0"
    command_line: str | None = None  # ncu's, as recorded (secrets still in it: redact before showing)
    processes: tuple[str, ...] = ()  # "pid 838 /tmp/sets/copy", one a profiled process
    host: str | None = None  # the profiled machine's name
    created_at: str | None = None  # ISO 8601, UTC


def _text(value: int | bytes) -> str | None:
    """A recorded string as text; the NUL a Windows capture ends its process name with is dropped."""
    return value.decode("utf-8", "replace").rstrip("\x00") or None if isinstance(value, bytes) else None


def _fields(data: bytes) -> dict[int, list[int | bytes]]:
    """A message's fields by number, every value of a repeated one; {} when the bytes are not a
    message (a damaged detail is not recorded, not a reason to refuse the launches)."""
    out: dict[int, list[int | bytes]] = {}
    try:
        for number, value in message_fields(data):
            out.setdefault(number, []).append(value)
    except (IndexError, ValueError, KeyError):
        return {}
    return out


def _merge(found: dict[int, list[int | bytes]], session: bytes) -> None:
    for number, values in _fields(session).items():
        found.setdefault(number, []).extend(values)


def read(framing: Framing) -> Session:
    """The report's session details, from its block headers as the check of its framing walked
    them (ncu_rep.framing; no launch is read)."""
    details: dict[int, list[int | bytes]] = {}
    processes: list[str] = []
    for block_session in framing.sessions:
        _merge(details, block_session)
    for block_process in framing.processes:
        process = _fields(block_process)
        pid, name = process.get(PID, [None])[0], _text(process.get(PROCESS_NAME, [b""])[0])
        line = " ".join(x for x in (f"pid {pid}" if isinstance(pid, int) else "", name or "") if x)
        if line and line not in processes:
            processes.append(line)
    versions = {}
    for raw in details.get(VERSIONS, []):
        info = _fields(raw) if isinstance(raw, bytes) else {}
        provider, version = (_text(info.get(n, [b""])[0]) for n in (1, 2))
        if provider and version:
            versions[provider] = version
    system = next((_fields(v) for n in (TARGET, HOST) for v in details.get(n, []) if isinstance(v, bytes)), {})
    # Unix seconds; a damaged value (past year 4000) is not recorded
    created = next((v for v in details.get(CREATED, []) if isinstance(v, int) and 0 < v < 1 << 36), None)
    build = versions.get(NCU)
    command = next((t for v in details.get(COMMAND_LINE, []) if (t := _text(v))), None)
    return Session(
        ncu_version=build.split()[0] if build else None, cuda_version=versions.get(CUDA),
        command_line=command.strip() if command else None, processes=tuple(processes),
        host=_text(system.get(COMPUTER, [b""])[0]),
        created_at=None if created is None else datetime.fromtimestamp(created, timezone.utc).isoformat())
