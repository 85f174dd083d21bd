"""kernelscope bundle kernel-internals: kernel_internals written into each bundle."""

from __future__ import annotations

import argparse
from typing import Any

from .args import add_reading, add_verb, analyze_request, refuse
from .output import say


def add_arguments(sub: argparse._SubParsersAction[Any]) -> None:
    """bundle and its sub-verb kernel-internals."""
    bu = add_verb(sub, "bundle", "bundle tools", None, "kernelscope bundle kernel-internals bundles/gemm")
    ki = add_verb(bu.add_subparsers(dest="bundle_command", required=True), "kernel-internals",
                  "write kernel_internals into the bundle's inference_perfbench_v1.json", cmd_kernel_internals,
                  "kernelscope bundle kernel-internals bundles/gemm bundles/attn")
    add_reading(ki, "bundle directories", " (each gets its own kernel_internals)", alias="--bundle")


def cmd_kernel_internals(a: argparse.Namespace) -> int:
    from .. import app

    refuse("bundle kernel-internals", ((a.achievable, "--achievable", "inference_perfbench_v1's kernel_internals "
                                         "has no figure against measured ceilings; to hold pct_sol to them, give "
                                         "that file as --ceilings"),))
    say("wrote " + ", ".join(str(p) for p in app.kernel_internals(analyze_request(a))))
    return 0
