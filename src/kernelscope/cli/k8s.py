"""kernelscope k8s inspect|capture|cleanup: a Kubernetes deployment captured through a sister pod."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import argtypes as T
from .args import add_verb
from .capture import add_capture_options, add_window, multiplex_option, plan_from
from .output import analysis_text, emit, say, show

if TYPE_CHECKING:  # imported where used: `kernelscope --help` starts without them
    from ..k8s.findings import Inspection


def add_arguments(sub: argparse._SubParsersAction[Any]) -> None:
    """k8s and its sub-verbs inspect, capture and cleanup."""
    from ..k8s import DEFAULT_NCU_HOME, DEFAULT_TOOLS_IMAGE

    k8 = add_verb(sub, "k8s", "capture from a Kubernetes deployment through a sister pod", None,
                  "kernelscope k8s capture -n serving deploy/llama --kernel regex:nvjet --out bundles/live")
    k8_sub = k8.add_subparsers(dest="k8s_command", required=True)
    for name, text, example in (
            ("inspect", "which strategy is possible, what the run needs, and why",
             "kernelscope k8s inspect -n serving deploy/basic-inference"),
            ("capture", "plan, then run: sister -> capture -> copy out -> cleanup",
             "kernelscope k8s capture -n serving deploy/llama --kernel regex:nvjet --out bundles/live --dry-run"),
            ("cleanup", "remove kernelscope sisters: one release, the expired ones, or all of ours",
             "kernelscope k8s cleanup -n serving --release basic-inference-ncu")):
        kp = add_verb(k8_sub, name, text, cmd_k8s, example,
                      "exit codes: 0 a strategy is possible, 1 blocked, 2 an error" if name == "inspect" else "")
        kp.add_argument("-n", "--namespace", default="default", help="the Kubernetes namespace (default: default)")
        kp.add_argument("--timeout", type=T.seconds, default=600.0, help="seconds for every wait (default 600)")
        if name == "cleanup":
            kp.add_argument("--release", help="one sister release (refused unless kernelscope made it)")
            kp.add_argument("--expired", action="store_true", help="only sisters past their expiry")
            kp.add_argument("--dry-run", action="store_true",
                            help="list what would be removed (found by kernelscope's owner label), remove nothing")
            continue
        kp.add_argument("deployment", help="deploy/NAME")
        kp.add_argument("--tools-image", default=DEFAULT_TOOLS_IMAGE,
                        help="image holding ncu (e.g. an NGC PyTorch image for a newer ncu)")
        kp.add_argument("--container", help="the GPU container (default: the one requesting nvidia.com/gpu)")
        kp.add_argument("--strategy", choices=("wrap", "attach", "direct"),
                        help="wrap (default): run the server under a scoped ncu; attach: single-process servers "
                             "only; direct: the production pod, if already attachable")
        kp.add_argument("--grant-profiling-cap", action="store_true",
                        help="add CAP_SYS_ADMIN to the sister's GPU container (counter access for a root "
                             "process; opt-in)")
        kp.add_argument("--vllm-version", metavar="X.Y.Z",
                        help="the server's vLLM release, when neither its running pod nor its image tag says "
                             "(decides how the serving window is opened)")
        if name == "capture":
            add_window(kp)
            add_capture_options(kp)
            kp.add_argument("--dry-run", action="store_true",
                            help="print the sister pod spec and every kubectl/helm step, change nothing")
            kp.add_argument("--from-manifest", metavar="FILE", type=T.path,
                            help="with --dry-run: plan from this file's deployment (`kubectl get deploy NAME -o "
                                 "yaml`, or an apply manifest) with no cluster at all")
            kp.add_argument("--ncu-home", default=DEFAULT_NCU_HOME, help="where ncu lives inside the tools image")
            kp.add_argument("--ncu-in-image", help="an ncu path already in the serving and tools images (no copy)")
            kp.add_argument("--pull-secret", help="imagePullSecret for the tools image's registry")
            kp.add_argument("--release", help="sister release name (default ks-NAME-<capture id>)")
            kp.add_argument("--entrypoint", type=T.words,
                            help="the image's ENTRYPOINT, for a container that sets only args")
            kp.add_argument("--pod-per-kernel", action="store_true",
                            help="one sister per kernel (a model load each) instead of one filter covering all")
            multiplex_option(kp, "a sister pod: a model load a group")
            kp.add_argument("--warmup-requests", type=T.count, default=0,
                            help="OpenAI-style requests sent to the sister itself once Ready, so the kernels run")
            kp.add_argument("--warmup-path", default="/v1/completions",
                            help="the path warm-up requests go to (default /v1/completions)")
            kp.add_argument("--warmup-port", type=T.port,
                            help="the server's port (default: its --port or containerPort)")
            kp.add_argument("--warmup-body", help="JSON body (default: a short completion for the served model)")
            kp.add_argument("--window", choices=("serving", "start"),
                            help="where the captured launches come from: serving (default for a vLLM server: ncu "
                                 "--profile-from-start off, vLLM's CUDA profiler on, POST /start_profile after the "
                                 "warm-up requests) or start (counted from the process's start, --launch-skip: "
                                 "start-up's launches too)")
            kp.add_argument("--ttl", type=T.positive, default=3600,
                            help="the sister's hard expiry, seconds (default 3600)")


def _print_inspection(ins: Inspection) -> None:
    show(f"{ins.kind.lower()} {ins.namespace}/{ins.deployment}: {ins.replicas} replica(s), "
          f"GPU container {ins.container}, image {ins.image}, node {ins.node or '?'}, pod {ins.pod or 'none'}, "
          f"{ins.tensor_parallel} GPU worker process(es)")
    for f in ins.findings:
        show(f"  [{f.level}] {f.name}: {f.message}")
        show(f"         evidence: {f.evidence}")
    show(f"strategy: {ins.strategy} — {ins.strategy_reason}")
    for f in ins.blocked():
        show(f"BLOCKED by {f.name}")


def cmd_k8s(a: argparse.Namespace) -> int:
    from .. import app

    if a.k8s_command == "inspect":
        ins = app.k8s_inspect(a.namespace, a.deployment, a.tools_image, a.container, a.strategy,
                              a.grant_profiling_cap, a.vllm_version)
        _print_inspection(ins)
        return 1 if ins.blocked() else 0
    if a.k8s_command == "cleanup":
        from ..k8s.dryrun import cleanup_lines

        for line in cleanup_lines(app.k8s_cleanup(a.namespace, a.release, a.expired, a.timeout, a.dry_run)):
            show(line)
        return 0
    return _k8s_capture(a)


def _k8s_capture(a: argparse.Namespace) -> int:
    from .. import app
    from ..k8s.capture import K8sCaptureRequest
    from ..k8s.dryrun import capture_plan

    req = K8sCaptureRequest(
        namespace=a.namespace, target=a.deployment, plan=plan_from(a), out=Path(a.out),
        command=("kernelscope", *sys.argv[1:]), tools_image=a.tools_image, ncu_home=a.ncu_home,
        ncu_in_image=a.ncu_in_image, pull_secret=a.pull_secret, release=a.release, container=a.container,
        entrypoint=a.entrypoint, strategy=a.strategy,
        pod_per_kernel=a.pod_per_kernel, grant_profiling_cap=a.grant_profiling_cap,
        warmup_requests=a.warmup_requests, warmup_path=a.warmup_path, warmup_body=a.warmup_body,
        warmup_port=a.warmup_port, window=a.window, vllm_version=a.vllm_version,
        dry_run=a.dry_run, manifest=Path(a.from_manifest) if a.from_manifest else None, timeout=a.timeout,
        ttl_s=a.ttl, context=app.parse_context(a.context or []))
    result = app.k8s_capture(req, say)
    _print_inspection(result.inspection)
    show(f"policy: {result.policy}; {len(result.plan.units())} capture unit(s); release {result.release}")
    if result.plan.multiplex:
        show(app.multiplex_line(result.plan).removeprefix("# "))
    for note in result.plan.notes:
        show(f"  note: {note}")
    if a.dry_run:
        for line in capture_plan(result, req.manifest):
            show(line)
        return 0
    for line in result.failed:
        say(f"not captured: {line}")
    say(f"bundle written to {result.out}; the sister is removed")
    emit(analysis_text(app.analyze(app.AnalyzeRequest((Path(a.out),))), "table"))
    return 1 if result.failed else 0
