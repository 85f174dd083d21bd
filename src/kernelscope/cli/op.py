"""kernelscope op: a single-op harness run under a capture of its main kernel."""

from __future__ import annotations

import argparse
from typing import Any

from .args import add_verb
from .capture import add_local_capture_options, capture_request, plan_from, print_capture
from .output import say


def add_arguments(sub: argparse._SubParsersAction[Any]) -> None:
    """op: the harness's options (capture.harness), then the capture's."""
    from ..capture.harness import add_op_arguments

    o = add_verb(sub, "op", "single-op harness + capture of its main kernel", cmd_op,
                 "kernelscope op gemm --m 256 --n 4096 --k 8192 --dtype fp8 --out bundles/fp8")
    add_op_arguments(o)
    o.add_argument("--kernel", dest="op_kernel", help="override the op's kernel filter")
    add_local_capture_options(o)


def cmd_op(a: argparse.Namespace) -> int:
    from .. import app
    from ..capture.harness import settle

    spec = settle(vars(a))
    req = app.OpRequest(harness=spec, kernel=a.op_kernel, capture=capture_request(a, plan_from(a)))
    return print_capture(app.op(req, say))
