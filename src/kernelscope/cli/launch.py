"""kernelscope launch: a program started under ncu for `capture --attach` to profile."""

from __future__ import annotations

import argparse
from typing import Any

from .. import argtypes as T
from .args import add_verb
from .output import emit, say


def add_arguments(sub: argparse._SubParsersAction[Any]) -> None:
    """launch: the port, the hold, ncu."""
    la = add_verb(sub, "launch", "start PROGRAM (after --) under ncu so that `capture --attach` can profile it",
                  cmd_launch, "kernelscope launch -- python3 -m my_server   # then: capture --attach 127.0.0.1:49152")
    la.add_argument("--port", type=T.port, help="base port (ncu default 49152)")
    la.add_argument("--hold-timeout", type=T.seconds, default=600.0,
                    help="seconds a process may stay held at its first CUDA call with no attach before the program "
                         "is stopped (default 600; counted from the hold, which for vLLM comes 20-60 s after start)")
    la.add_argument("--ncu", type=T.path, help="ncu binary (default: ncu on PATH)")
    la.add_argument("--dry-run", action="store_true", help="print the ncu command and run nothing")


def cmd_launch(a: argparse.Namespace) -> int:
    import shlex

    from .. import app, redact

    argv, code = app.launch(a.target, a.port, a.ncu, dry_run=a.dry_run, hold_timeout=a.hold_timeout, progress=say)
    if a.dry_run:
        emit(shlex.join(redact.argv(argv)) + "\n")
    return code
