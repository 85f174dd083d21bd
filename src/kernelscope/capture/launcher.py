"""`kernelscope launch -- PROGRAM`: PROGRAM under `ncu --mode launch`, which holds each CUDA process
at its first CUDA call until `ncu --mode attach` (`kernelscope capture --attach`) connects. A server
held with no client never serves, so this watches it: it says when a process is held and how to
attach, and stops the program if it stayed held, with no attach, for the hold timeout (vLLM's
EngineCore is held 20-60 s after the server starts: the timeout counts from the hold).

Held is read from two signs together, since neither alone is certain: the attach port accepts
connections (a probe connects and closes at once, as `capture --attach` does before it attaches),
and the program's processes use almost no CPU (a process blocked at its first CUDA call does
nothing; one released to run loads its model, compiles, serves). Seen on the H200 with vLLM 0.26:
ncu printed "==PROF== Waiting for profiler to attach on ports 49152-49215" and the port accepted
while the EngineCore was held.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

DEFAULT_PORT = 49152  # ncu's first attach port
PORTS = 64  # ncu's range: 49152-49215, a port a process, first free first
POLL_S = 1.0
IDLE_CPU_SHARE = 0.05  # under this share of one core over the idle window, the processes are doing nothing
IDLE_WINDOW_S = 30.0


def accepting(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def _group(pgid: int | None) -> Iterator[tuple[int, list[str]]]:
    """(pid, its /proc stat fields after the name: state ppid pgrp ... utime(11) stime(12)) of every
    process in process group `pgid` (None: every process)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()
        except OSError:  # it ended meanwhile
            continue
        if pgid is None or int(fields[2]) == pgid:
            yield int(entry), fields


def group_cpu_s(pgid: int) -> float:
    """CPU seconds (user + system) of every process in the process group: ncu and all it started."""
    tick = os.sysconf("SC_CLK_TCK")
    return sum((int(f[11]) + int(f[12])) / tick for _, f in _group(pgid))


@dataclass(frozen=True)
class Listener:
    """A process of the launch that listens on an ncu attach port: the one an attach to that port
    reaches. vLLM's API server and its EngineCore are two processes, each may have a port."""

    port: int
    pid: int
    title: str  # its command line as it shows it now (vLLM retitles its EngineCore)
    group: int  # its process group: the launch's, whose leader is ncu


def _listening_inodes(ports: range) -> dict[int, int]:
    """Socket inode -> port, for the TCP sockets listening on `ports` (IPv4 and IPv6)."""
    out: dict[int, int] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            port = int(f[1].rsplit(":", 1)[1], 16)
            if f[3] == "0A" and port in ports:  # 0A: LISTEN
                out[int(f[9])] = port
    return out


def _link(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:  # closed meanwhile (the listing's own descriptor, for one)
        return ""


def _cmdline(pid: int) -> tuple[str, ...]:
    """The process's arguments; () when it ended meanwhile, or is not ours to read."""
    try:
        argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
    except OSError:
        return ()
    return tuple(a.decode(errors="replace") for a in argv if a)


def listeners(pgid: int | None, first_port: int = DEFAULT_PORT) -> list[Listener]:
    """The processes of process group `pgid` (None: any) listening on the attach ports from
    `first_port`, by port; empty where /proc does not say (another OS, another user's processes)."""
    inodes = _listening_inodes(range(first_port, first_port + PORTS))
    found: list[Listener] = []
    for pid, fields in _group(pgid) if inodes else ():
        try:
            socks = {int(t[8:-1]) for fd in os.listdir(f"/proc/{pid}/fd") if (t := _link(f"/proc/{pid}/fd/{fd}"))
                     .startswith("socket:[")}
        except (OSError, ValueError, IndexError):  # ended meanwhile, or not ours to read
            continue
        if not (argv := _cmdline(pid)):
            continue
        found += [Listener(port, pid, " ".join(argv)[:120], int(fields[2])) for inode, port in inodes.items()
                  if inode in socks]
    return sorted(found, key=lambda x: (x.port, x.pid))


LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def held_program(host: str, port: int) -> tuple[str, ...]:
    """The program `kernelscope launch` holds for an attach on host:port, as it was given: its
    process group's leader is ncu (`ncu --mode launch`), so the program is the leader's first child,
    the listener's ancestor (a vLLM server, whose EngineCore child is the one that listens); a leader
    that is not ncu is the program. () when the host is another machine or /proc does not say: a
    capture --attach records it as its target, since its serving command says which engine, and
    which of its switches, the levers may name."""
    held = [x for x in listeners(None, port) if x.port == port] if host in LOCAL_HOSTS else []
    if not held:
        return ()
    leader = held[0].group
    own = _cmdline(leader)
    if own and not any(os.path.basename(a).startswith("ncu") for a in own[:2]):  # ncu, or a script run as ncu
        return own
    return next((argv for pid, fields in sorted(_group(leader)) if int(fields[1]) == leader
                 and (argv := _cmdline(pid))), ())


def run(argv: Sequence[str], program: str, port: int | None, hold_timeout: float, say: Callable[[str], None],
        probe: Callable[[str, int], bool] = accepting, cpu: Callable[[int], float] = group_cpu_s,
        find: Callable[[int, int], list[Listener]] = listeners) -> int:
    """Run the launch command to its end; its exit code, or 3 when it was stopped for want of an
    attach. Its own process group, so that its CPU and its processes' ports can be read; a signal
    to us stops it too. Each process that listens is named with its port: with several (a server
    and its engine), the user attaches to the one that runs the GPU work."""
    port = port or DEFAULT_PORT
    program = program.rsplit("/", 1)[-1]
    proc = subprocess.Popen(list(argv), start_new_session=True)
    said = False
    named: set[int] = set()  # ports said: a child inherits its parent's socket (Triton's ptxas does), not a new port
    stuck_since: float | None = None
    samples: list[tuple[float, float]] = []  # (time, the group's CPU seconds)
    try:
        while proc.poll() is None:
            now = time.monotonic()
            samples = [s for s in samples if now - s[0] <= IDLE_WINDOW_S + POLL_S] + [(now, cpu(proc.pid))]
            idle = now - samples[0][0] >= IDLE_WINDOW_S * 0.9 and \
                samples[-1][1] - samples[0][1] < IDLE_CPU_SHARE * (now - samples[0][0])
            found = find(proc.pid, port)
            for x in found:
                if x.port not in named:
                    named.add(x.port)
                    say(f"pid {x.pid} ({x.title}) listens for an attach on 127.0.0.1:{x.port}: kernelscope capture "
                        f"--attach 127.0.0.1:{x.port} reaches it")
            listening = bool(found) or probe("127.0.0.1", port)
            if listening and not said:
                said, at = True, found[0].port if found else port
                say(f"{program} is held at its first CUDA call, waiting for an attach on 127.0.0.1:{at}: "
                    f"kernelscope capture --attach 127.0.0.1:{at} --kernel ... --out DIR (stopped if it stays "
                    f"held with no attach for {hold_timeout:.0f} s: --hold-timeout)")
            stuck_since = (stuck_since or now) if listening and idle else None  # running or attached: not held
            if stuck_since is not None and now - stuck_since > hold_timeout:
                say(f"{program} stayed held at its first CUDA call with no attach for {hold_timeout:.0f} s "
                    "(its port open, its processes idle): stopping it rather than leave it held for ever")
                _end(proc)
                return 3
            time.sleep(POLL_S)
    except BaseException:
        _end(proc)
        raise
    return proc.returncode


def _end(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to its whole group (ncu forwards it), then SIGKILL."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    except ProcessLookupError:
        pass
