"""`kernelscope k8s capture`: inspect, enforce the policy, then run the capture engine through the
pod transport, with cleanup on every exit: an error, Ctrl-C, SIGTERM or SIGHUP (a cancelled CI
job, a closed terminal, `timeout`). A second interrupt during cleanup is ignored, with a message
naming `kernelscope k8s cleanup`, so a release is never left half-uninstalled."""

from __future__ import annotations

import json
import signal
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import FrameType
from typing import Any, Literal

from ..capture import engine
from ..capture.bundle import report_stem
from ..capture.preflight import vllm_cuda_profiler
from ..capture.transport import Progress
from ..errors import Interrupted, KubeError, PlanError
from ..manifest import KubeContext
from ..ncu.argv import capture_argv
from ..ncu.plan import POLICIES, Attach, CapturePlan, one_session, validate
from ..report_manifest import NcuFacts
from ..serving import context_of, is_vllm, recognise, with_options, words
from . import DEFAULT_NCU_HOME, DEFAULT_TOOLS_IMAGE, sister
from .findings import Inspection, Strategy
from .inspect import inspect, option
from .kubectl import Kube, Step, check_name, ref
from .manifest_file import load as load_manifest
from .transport import PodTransport, Warmup
from .vllm_release import ProfilerSwitch
from .workload import parse_target


@contextmanager
def signals_clean_up(say: Progress) -> Iterator[Callable[[], None]]:
    """SIGINT, SIGTERM and SIGHUP raise Interrupted (so `finally` blocks clean up); the yielded
    function switches to cleanup mode, where a further signal is reported and ignored."""
    names = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    old = {s: signal.getsignal(s) for s in names}

    def ignore(signum: int, _frame: FrameType | None) -> None:
        say(f"{signal.Signals(signum).name} ignored: cleaning up (if this is stuck, run `kernelscope k8s cleanup`)")

    def cleaning() -> None:
        for s in names:
            signal.signal(s, ignore)

    def interrupt(signum: int, _frame: FrameType | None) -> None:
        cleaning()  # from the first signal on, a second one cannot cut the cleanup short
        raise Interrupted(signum)

    for s in names:
        signal.signal(s, interrupt)
    try:
        yield cleaning
    finally:
        for s, h in old.items():
            signal.signal(s, h)


Window = Literal["serving", "start"]


def serving_window(serving: list[str], window: Window | None, switch: ProfilerSwitch) -> tuple[list[str], bool, str]:
    """The sister's serving command for the window asked (none asked: serving for a vLLM that has a
    CUDA-profiler switch, `switch`), whether it is the serving window, and what the plan says of it.
    The serving window turns vLLM's CUDA profiler on, so that POST /start_profile calls
    cudaProfilerStart in the worker and ncu (`--profile-from-start off`) profiles serving traffic only."""
    vllm = is_vllm(serving)
    if window == "serving" and not vllm:
        raise PlanError("--window serving needs a vLLM server (its /start_profile opens the window); this command "
                        f"is not one: {' '.join(serving[:3])}…; use --window start with --launch-skip")
    if window == "start" or not vllm:
        return serving, False, ""
    if vllm_cuda_profiler(words(serving)):
        return serving, True, "the serving command turns vLLM's CUDA profiler on itself (--profiler-config)"
    if not switch.exists:
        if window == "serving":
            raise PlanError(f"--window serving: {switch.why}; use --window start with --launch-skip N (launches "
                            "counted from the server's start, model load and warm-up included)")
        return serving, False, (f"{switch.why}: the window is the server's start, ncu --launch-skip counting from "
                                "it (model load, compilation and CUDA-graph capture included unless --launch-skip "
                                "passes them)")
    return with_options(serving, list(switch.options)), True, switch.why


@dataclass(frozen=True)
class K8sCaptureRequest:
    namespace: str
    target: str
    plan: CapturePlan
    out: Path
    command: tuple[str, ...]
    tools_image: str = DEFAULT_TOOLS_IMAGE
    ncu_home: str = DEFAULT_NCU_HOME
    ncu_in_image: str | None = None
    pull_secret: str | None = None
    release: str | None = None
    container: str | None = None
    entrypoint: tuple[str, ...] | None = None
    strategy: Strategy | None = None
    pod_per_kernel: bool = False
    grant_profiling_cap: bool = False
    warmup_requests: int = 0
    warmup_path: str = "/v1/completions"
    warmup_port: int | None = None  # default: the server's --port, its containerPort, else 8000
    warmup_body: str | None = None
    window: Window | None = None  # None: serving for a vLLM server, else from the start
    vllm_version: str | None = None  # None: read from the running pod or the image tag
    dry_run: bool = False
    manifest: Path | None = None  # plan (a dry run) from this file's deployment, with no cluster
    timeout: float = 600.0
    ttl_s: int = 3600
    context: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class K8sCaptureResult:
    inspection: Inspection
    policy: str
    plan: CapturePlan
    release: str
    steps: list[Step]  # every kubectl/helm step, in order (a dry run: the ones it would run)
    sisters: list[dict[str, Any]]  # every sister Pod as applied, secrets redacted
    out: Path | None
    failed: list[str]


def _body(ins: Inspection, body: str | None) -> str:
    """vLLM's completions endpoint wants the served model name."""
    if body:
        return body
    args = [*ins.command, *ins.args]
    model = option(args, "--served-model-name") or option(args, "--model")
    if model is None and ins.command[-1:] == ["serve"] and ins.args:
        model = ins.args[0]
    return json.dumps({"prompt": "Hello, my name is", "max_tokens": 32, **({"model": model} if model else {})})


def plan_for(ins: Inspection, req: K8sCaptureRequest, serving: list[str]) -> tuple[CapturePlan, str]:
    policy = POLICIES["single-replica" if ins.replicas <= 1 else "multi-replica"]
    plan = validate(req.plan, policy)
    if ins.strategy == "wrap":
        plan = replace(plan, target=tuple(serving), target_processes="all")
        if ins.tensor_parallel > 1:
            plan = replace(plan, filter_mode="per-gpu").with_notes(
                f"{ins.tensor_parallel} GPU worker processes: --filter-mode per-gpu, so the launch window applies "
                "on each GPU (one capture per rank)")
    else:
        plan = replace(plan, attach=Attach("127.0.0.1", 49152), target=())
    if plan.multiplex:  # a counter group a unit: each its own sister, or (direct) its own session
        runs = (f"{len(plan.units())} attach sessions to the production pod's server" if ins.strategy == "direct" else
                f"{len(plan.units())} attach sessions, one after another, to one sister (one model load)"
                if ins.strategy == "attach" else
                f"{len(plan.units())} sister pods, one after another, each loading the model")
        plan = plan.with_notes(f"--multiplex: {runs}, each collecting its counters on the next launches of the "
                               "kernels; merged on read")
    elif not req.pod_per_kernel:
        plan = one_session(plan, f"{ins.strategy}: one sister pod (one model load) runs one ncu")
    return plan, policy.name


def capture(req: K8sCaptureRequest, say: Progress) -> K8sCaptureResult:
    if req.manifest is not None and not req.dry_run:
        raise PlanError("--from-manifest plans a capture from a file, with no cluster: it needs --dry-run")
    kube = Kube(req.namespace, dry_run=req.dry_run, timeout=req.timeout, offline=req.manifest is not None)
    dep = load_manifest(req.manifest, parse_target(req.target), req.namespace) if req.manifest else None
    ins = inspect(kube, req.target, req.tools_image, req.container, req.strategy, req.grant_profiling_cap, dep,
                  req.vllm_version)
    if ins.blocked():
        raise PlanError("refusing to capture: " + "; ".join(f.message for f in ins.blocked()))
    if ins.strategy == "direct" and not ins.pod:
        raise PlanError(f"--strategy direct works inside the running production pod, and {ins.deployment} has none"
                        + (" that a plan from --from-manifest can name" if dep else ""))
    serving = ins.serving_command(list(req.entrypoint) if req.entrypoint else None) if ins.strategy != "direct" \
        else []
    switch = ins.switch  # only a vLLM server's serving window takes it (serving_window)
    serving, window, how = serving_window(serving, req.window, switch) if ins.strategy != "direct" else \
        (serving, False, "")
    plan, policy = plan_for(ins, req, serving)
    if how and not window:
        plan = plan.with_notes(how)
    if window:
        plan = replace(plan, profile_from_start=False, window="serving").with_notes(
            f"serving window: ncu --profile-from-start off; vLLM's CUDA profiler on ({how}); after "
            f"{max(1, req.warmup_requests)} warm-up request(s) POST /start_profile opens the window, and requests "
            "go on until the report is whole: every captured launch is from serving traffic, none from start-up")
    capture_id = uuid.uuid4().hex[:8]
    release = req.release or f"ks-{ins.deployment[:38].rstrip('-.')}-{capture_id}"
    opts = sister.SisterOptions(release=release, capture_id=capture_id, tools_image=req.tools_image,
                                ncu_home=req.ncu_home, ncu_in_image=req.ncu_in_image, pull_secret=req.pull_secret,
                                grant_profiling_cap=req.grant_profiling_cap, ttl_s=req.ttl_s,
                                env=switch.env if window else (), drop_env=switch.drop_env if window else ())
    warmup = Warmup(max(1, req.warmup_requests) if window else req.warmup_requests,
                    req.warmup_port or (None if window else ins.server_port), req.warmup_path,
                    _body(ins, req.warmup_body), serving_window=window) \
        if req.warmup_requests or window else None
    transport = PodTransport(kube, ins, opts, serving, warmup, say, one_sister=plan.multiplex)
    ncu = opts.ncu if ins.strategy != "direct" else (req.ncu_in_image or "ncu")
    kctx = KubeContext(namespace=req.namespace, deployment=ins.deployment, replicas=ins.replicas,
                       container=ins.container, image=ins.image, node=ins.node, production_pod=ins.pod,
                       strategy=ins.strategy, release=None if ins.strategy == "direct" else release,
                       tools_image=req.tools_image, capture_id=capture_id, tensor_parallel=ins.tensor_parallel)
    out: Path | None = None
    failed: list[str] = []
    with signals_clean_up(say) as cleaning:
        try:
            if req.dry_run:
                _dry_run(plan, transport, ncu, say)
            else:
                user = {**context_of(serving or [*ins.command, *ins.args], recognise((), ins.image)),
                        **req.context}  # the user's words win
                ctx = engine.Context(command=req.command, ncu=NcuFacts(ncu, "in pod"), kubernetes=kctx, user=user,
                                     app_cuda=ins.app_cuda, commands_run=kube.log, extras=transport.extra_files,
                                     secrets=transport.secrets)
                manifest = engine.run(plan, req.out, transport, ctx, req.timeout, say)
                out = req.out
                failed = [c.error or "" for c in manifest.failed]
        finally:
            cleaning()
            problems = transport.cleanup()
            if problems:
                say("cleanup problems: " + "; ".join(problems) + f" — run `kernelscope k8s cleanup -n {req.namespace} "
                    f"--release {release}`")
    return K8sCaptureResult(ins, policy, plan, release, kube.steps, transport.sisters, out, failed)


def _dry_run(plan: CapturePlan, transport: PodTransport, ncu: str, say: Progress) -> None:
    """Every step recorded, none that changes the cluster run."""
    with tempfile.TemporaryDirectory() as tmp:
        for unit in plan.units():
            local = Path(tmp) / f"{report_stem(unit.label, unit.index)}.ncu-rep"
            remote = transport.report_path(local)
            transport.capture(capture_argv(plan, unit, remote, ncu), remote, local, {}, 0.0, say)
            transport.end_unit()


@dataclass(frozen=True)
class Removal:
    """One thing `k8s cleanup` removes (a dry run: would remove): a sister's helm release, or a
    sister pod whose release record is gone (`pod/NAME`), with the sister pod's labels, which say
    whose copy it is and when it expires."""

    name: str
    labels: dict[str, str]


@dataclass(frozen=True)
class Cleanup:
    namespace: str
    dry_run: bool
    now: float  # the expiry labels are read against this (unix seconds)
    removed: list[Removal]
    steps: list[Step]  # the reads that found them, then the removals (a dry run: not run)


def cleanup(namespace: str, release: str | None, expired: bool, timeout: float, now: float,
            dry_run: bool = False) -> Cleanup:
    """Remove our sisters: one release, every expired one, or (neither given) every one of ours,
    found by our owner label only; a dry run lists them and removes nothing."""
    kube = Kube(namespace, dry_run=dry_run, timeout=timeout)
    listed = kube.h("list", "-q", "-l", f"{sister.OWNER_LABEL}={sister.OWNER}", "--deployed", "--failed",
                    "--pending", "--uninstalling", "--superseded", mutates=False) or ""
    ours = [check_name("release", r, cluster=True) for r in listed.split() if r]
    pods = kube.get_json("pods", f"--selector={sister.OWNER_LABEL}={sister.OWNER}").get("items", [])
    labels = {check_name("pod", p["metadata"]["name"], cluster=True): p["metadata"].get("labels") or {} for p in pods}
    expiry = {n: sister.expires_at(lb) or 0 for n, lb in labels.items()}  # 0: unknown, not removed by --expired
    if release is not None:
        if release not in ours:
            raise KubeError(f"release {release} is not one of kernelscope's sisters in {namespace}; not touching it")
        targets = [release]
    elif expired:
        targets = [r for r in ours if expiry.get(r, 0) and expiry[r] <= now]
    else:
        targets = ours
    removed = []
    for r in targets:
        kube.uninstall(r, timeout)
        removed.append(Removal(r, labels.get(r, {})))
    orphans = [n for n, t in expiry.items() if n not in ours and (release is None or n == release)
               and (not expired or (t and t <= now))]
    for pod in orphans:  # a sister whose helm record is gone
        kube.k("delete", ref("pod", pod), "--ignore-not-found", "--wait=true", mutates=True)
        removed.append(Removal(f"pod/{pod}", labels[pod]))
    return Cleanup(namespace, dry_run, now, removed, kube.steps)
