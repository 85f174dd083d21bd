"""`kernelscope k8s inspect`: read a deployment and its running pod, and say which capture strategy
is possible, what the run needs (RBAC, a free GPU, quota, counter access), and why, with the
evidence for each finding."""

from __future__ import annotations

import copy
import re
from typing import Any

from .. import redact
from ..errors import KubeError
from ..serving import VLLM_IMAGE, is_vllm, spelled, words
from . import DEFAULT_TOOLS_IMAGE, watch
from .findings import GPU, Finding, Inspection, Level, Strategy, as_int, gpu_request, gpu_resource, named, unchecked
from .kubectl import Kube, check_name, ref, selector
from .preflight import preflight, without_cluster
from .vllm_release import image_release, release
from .workload import RESOURCE, Target, claim_volumes, kserve_deployment, normal, parse_target

INJECTION_ENV = "CUDA_INJECTION64_PATH"
GPU_MEM_UTIL_WARN = 0.85
# NVIDIA GPU feature discovery labels for the CUDA version the node's driver supports (new, old)
DRIVER_CUDA_LABELS = (("nvidia.com/cuda.runtime-version.major", "nvidia.com/cuda.runtime-version.minor"),
                      ("nvidia.com/cuda.runtime.major", "nvidia.com/cuda.runtime.minor"))
DRIVER_VERSION_LABELS = ("nvidia.com/cuda.driver-version.full", "nvidia.com/cuda.driver.major")
LOG_CUDA = re.compile(r"(?:CUDA(?: runtime)?(?: version)?[ :=]+v?(\d+)\.(\d+))|(?:\+cu(\d{2,3})\b)", re.IGNORECASE)
CUDA_VERSION = re.compile(r"\d{1,3}\.\d{1,3}")
DRIVER_VERSION = re.compile(r"\d{1,4}(\.\d{1,4}){0,2}")
NCU_TAG = re.compile(r"ncu[-_]?(\d{4}\.\d+(?:\.\d+)?)")
CUDA_IMAGE = re.compile(r"(?:^|/)nvidia/cuda:(\d+\.\d+\.\d+)-(?:cudnn\d*-)?devel")
# the ncu a CUDA devel image ships (dpkg nsight-compute-2025.3.1 in a CUDA 13.0.2 devel image, read on
# the H200 machine); another CUDA's is read with ncu --version in the pod
NCU_OF_CUDA = {"13.0.2": "2025.3.1"}


def log_cuda_version(log: str) -> str | None:
    """The CUDA version the application was built for, from its launch log (e.g. 'CUDA 13.0' or
    'torch 2.11.0+cu130')."""
    for m in LOG_CUDA.finditer(log):
        if m.group(1):
            return f"{m.group(1)}.{m.group(2)}"
        digits = m.group(3)
        return f"{digits[:-1]}.{digits[-1]}"
    return None


def option(args: list[str], *names: str) -> str | None:
    """The value of `--name V` or `--name=V` in a command line (the last one wins, as argparse does);
    `--a_b` is `--a-b`, as vLLM's parser reads it (serving.spelled)."""
    value = None
    for i, given in enumerate(args):
        a = spelled(given)
        for n in names:
            if a == n and i + 1 < len(args):
                value = args[i + 1]
            elif a.startswith(n + "="):
                value = a.split("=", 1)[1]
    return value


def parallel_processes(args: list[str]) -> int:
    """GPU worker processes a vLLM/SGLang command starts: tensor x pipeline parallel size."""
    tp = as_int(option(args, "--tensor-parallel-size", "-tp", "--tp-size", "--tp"), 1)
    pp = as_int(option(args, "--pipeline-parallel-size", "-pp", "--pp-size"), 1)
    return max(tp, 1) * max(pp, 1)


def gpu_container(spec: dict[str, Any], explicit: str | None) -> dict[str, Any]:
    """The container that runs the model: the one named, else the one asking for nvidia.com/gpu."""
    containers: list[dict[str, Any]] = spec.get("containers") or []
    if explicit:
        found = named(spec, explicit)
        if not found:
            listed = ", ".join(c.get("name", "?") for c in containers)
            raise KubeError(f"no container {explicit!r} (containers: {listed})")
        return found
    gpu = [c for c in containers if gpu_request(c) > 0]
    if len(gpu) == 1:
        return gpu[0]
    names = ", ".join(c.get("name", "?") for c in (gpu or containers))
    if not gpu and len(containers) == 1:
        return containers[0]
    raise KubeError(f"cannot tell the GPU container ({'several request ' + GPU if gpu else 'none requests ' + GPU}: "
                    f"{names}); pass --container NAME")


def _server_port(container: dict[str, Any], args: list[str]) -> int:
    port = option(args, "--port")
    if port is not None:
        return as_int(port, 8000)
    ports = [p.get("containerPort") for p in container.get("ports") or [] if p.get("containerPort")]
    return as_int(ports[0], 8000) if ports else 8000


def _node_cuda(labels: dict[str, str]) -> tuple[str | None, str | None]:
    """The CUDA version and driver the GPU operator's node labels name; a label that is not a version
    (hand-set, another operator's) names none: unknown, never read as one."""
    cuda = next((f"{labels[a]}.{labels.get(b, '0')}" for a, b in DRIVER_CUDA_LABELS if a in labels), None)
    driver = next((labels[k] for k in DRIVER_VERSION_LABELS if k in labels), None)
    return (cuda if cuda and CUDA_VERSION.fullmatch(cuda) else None,
            driver if driver and DRIVER_VERSION.fullmatch(driver) else None)


def attachable(command: list[str]) -> bool:
    """The container already runs its server under `ncu --mode launch`."""
    return any(c.endswith("ncu") for c in command) and "launch" in command


def _env_names(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: str(e.get("value", "<from " + next(iter(e.get("valueFrom") or {"ref": 0})) + ">"))
            for e in container.get("env") or [] if "name" in e}


API_KEY_ENV_NAMES = ("VLLM_API_KEY",)
ENV_REF = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")


def api_key(cont: dict[str, Any], argv: list[str]) -> tuple[str, dict[str, Any]] | None:
    """Where the server's API key comes from (vLLM's --api-key, else its VLLM_API_KEY env), as words
    and as an env entry the sister's tools container gets: a secretKeyRef copied as a reference, a
    `$VAR` as that variable's own entry; a literal only when the command itself holds one."""
    given = option(argv, "--api-key")
    env = {e["name"]: e for e in cont.get("env") or [] if isinstance(e, dict) and "name" in e}
    named_ref = ENV_REF.fullmatch(given or "")
    ref_name = named_ref.group(1) if named_ref else None
    if given is not None and ref_name is None:
        return "--api-key in the serving command (a literal)", {"value": given}
    for name in ([ref_name] if ref_name else list(API_KEY_ENV_NAMES)):
        entry = env.get(name)
        if entry is None:
            continue
        source = entry.get("valueFrom") or {}
        secret = source.get("secretKeyRef") or {}
        words_ = (f"env {name} from secret {secret.get('name')} key {secret.get('key')}" if secret else
                  f"env {name} ({next(iter(source), 'a literal')})")
        return words_, {k: v for k, v in entry.items() if k in ("value", "valueFrom")}
    if ref_name:  # from envFrom: Kubernetes expands $(VAR) from it in the tools container too
        return f"--api-key ${ref_name}, from the container's envFrom", {"value": f"$({ref_name})"}
    return None


# the installed vLLM's version, read without importing vLLM (a few ms of one core in production's pod)
VERSION_PY = "import importlib.metadata as m; print(m.version('vllm'))"


def _vllm_version(kube: Kube, ins: Inspection, pod: dict[str, Any] | None, given: str | None) -> tuple[str | None, str]:
    """vLLM's release and where it was read: the user's --vllm-version, the running production pod's
    installed package, else the project's own image tag; (None, why) when nothing says."""
    if given:
        if release(given) is None:
            raise KubeError(f"--vllm-version {given!r}: not a version (e.g. 0.11.0)")
        return given, "--vllm-version"
    if not is_vllm([*ins.command, *ins.args]) and not VLLM_IMAGE.search(ins.image.lower()):
        return None, "not a vLLM server"
    if ins.pod and pod is not None and watch.state(pod, ins.container).running:
        out = kube.k("exec", ref("pod", ins.pod), f"--container={ins.container}", "--", "python3", "-c", VERSION_PY,
                     check=False, timeout=60)
        found = (out or "").strip().splitlines()[-1:]
        if found and release(found[0]) is not None and len(found[0]) < 40:
            return found[0], f"the installed package in pod {ins.pod}"
    tagged = image_release(ins.image)
    if tagged:
        return tagged, f"the image tag {ins.image}"
    return None, f"no running pod to ask, and the image {ins.image or '(none)'} names no vLLM release"


def _gpu_container(ins: Inspection, cont: dict[str, Any]) -> Finding:
    """ok for a container that requests NVIDIA GPUs; a block for one that requests none (another
    vendor's, a router, an engine pinned by CUDA_VISIBLE_DEVICES alone, sharing a GPU it does not own)."""
    containers = f"containers: {', '.join(c.get('name', '?') for c in ins.template['spec']['containers'])}"
    if ins.gpus > 0:
        return Finding("gpu-container", "ok", f"GPU container {ins.container} ({ins.gpus} x {GPU}), "
                       f"{ins.tensor_parallel} GPU worker process(es), server port {ins.server_port}", containers)
    res = cont.get("resources") or {}
    other = sorted({k for part in ("requests", "limits") for k in res.get(part) or {} if k.endswith("/gpu")} - {GPU})
    pinned = _env_names(cont).get("CUDA_VISIBLE_DEVICES")
    why = (f"it requests {', '.join(other)}: ncu profiles NVIDIA GPUs only" if other else
           f"it pins CUDA_VISIBLE_DEVICES={pinned} with no {GPU} request: a sister would share a GPU that "
           "Kubernetes gave to no one, production's own on its node" if pinned is not None else
           "it runs no model on a GPU (a router, a gateway, a sidecar), or its GPU is not requested through "
           f"{GPU}; name the engine's container with --container")
    return Finding("gpu-container", "block", f"container {ins.container} requests no {GPU}: {why}", containers)


def _gpu_sharing(cont: dict[str, Any]) -> Finding | None:
    """A MIG slice or a shared GPU: what ncu can and cannot measure there (Nsight Compute 2025.3's
    Profiling Guide, "Multi-Instance GPU" and "Multi-Process Service"; its known issues)."""
    key = gpu_resource(cont) or ""
    env = _env_names(cont)
    if key.startswith("nvidia.com/mig-"):
        return Finding("gpu-sharing", "warn", f"a MIG slice ({key}): ncu profiles an isolated compute instance as "
                       "usual, but cannot read units shared with other MIG instances (it fails with 'Failed to access "
                       "the following metrics'), cannot lock clocks (kernelscope passes --clock-control none), and "
                       "other work on the GPU influences what it measures; the sister needs a free slice of this "
                       "profile", f"resources: {key}")
    if key.endswith(".shared") or any(k.startswith("CUDA_MPS_") for k in env):
        how = key if key.endswith(".shared") else ", ".join(sorted(k for k in env if k.startswith("CUDA_MPS_")))
        return Finding("gpu-sharing", "warn", f"a shared GPU ({how}): other pods' kernels run on it beside the "
                       "sister's, so times and throughput are not this server's alone; under MPS ncu measures all "
                       "clients together (ncu --mps), and ncu 2025.3's known issues list profiling with MPS enabled "
                       "as unsupported; capture on a GPU of its own when you can", f"resources / env: {how}")
    return None


def _production_state(ins: Inspection, pod: dict[str, Any] | None) -> Finding:
    """Whether production's pod runs: a copy of a template whose pod fails (a crash loop, an image it
    cannot pull) fails the same way, so that blocks; a pod not running yet, or none, leaves the checks
    that read it (admission-added env, the launch log's CUDA) unchecked, which is said."""
    where = f"{RESOURCE[ins.kind]}/{ins.deployment} .spec.replicas={ins.replicas}"
    if pod is None:
        if ins.replicas == 0:
            return Finding("production-pod", "info", "scaled to zero: no production pod to read; the sister "
                           "copies the template", where)
        return Finding("production-pod", "warn", "no production pod found: could not check what only a running "
                       "pod shows (env added at admission, the CUDA version in its launch log)", where)
    st = watch.state(pod, ins.container)
    name = f"pod {ins.pod}: phase {st.phase}"
    if st.phase == "Failed" or (st.failure and st.phase != "Succeeded"):
        return Finding("production-pod", "block", f"production's pod {ins.pod} does not run "
                       f"({st.failure or st.phase}): a sister, a copy of its template, would fail the same way",
                       name)
    if not st.running:
        return Finding("production-pod", "warn", f"production's pod {ins.pod} is {st.phase}, not running: could "
                       "not check what only a running pod shows (env added at admission, its launch log)", name)
    return Finding("production-pod", "ok", f"production's pod {ins.pod} runs", name)


def _production_pod(kube: Kube, dep: dict[str, Any]) -> dict[str, Any] | None:
    """A running pod of the workload (else any of its pods): found by its selector, and kept only if
    it belongs to it through its owner reference (a Deployment's through its ReplicaSet; a canary
    sharing the labels belongs to another Deployment). A pod with no owner reference cannot be told
    apart, and is kept, as is every pod when the workload records no uid."""
    labels = dep["spec"]["selector"].get("matchLabels") or {}
    pods = kube.get_json("pods", selector(labels)).get("items", []) if labels else []
    uid = (dep.get("metadata") or {}).get("uid")
    if uid and dep.get("kind") == "StatefulSet" and any(_owners(p) for p in pods):
        pods = [p for p in pods if not _owners(p) or any(o.get("uid") == uid for o in _owners(p))]
    elif uid and dep.get("kind", "Deployment") == "Deployment" and any(_owners(p) for p in pods):
        sets = kube.get_json("replicasets", selector(labels)).get("items", [])
        ours = {(rs.get("metadata") or {}).get("name") for rs in sets
                if any(o.get("uid") == uid for o in _owners(rs))}
        pods = [p for p in pods if not _owners(p)
                or any(o.get("kind") == "ReplicaSet" and o.get("name") in ours for o in _owners(p))]
    return next((p for p in pods if p.get("status", {}).get("phase") == "Running"), pods[0] if pods else None)


def _owners(obj: dict[str, Any]) -> list[dict[str, Any]]:
    refs = (obj.get("metadata") or {}).get("ownerReferences")
    return [r for r in refs if isinstance(r, dict)] if isinstance(refs, list) else []


def _read(kube: Kube, target: Target) -> dict[str, Any]:
    """The workload as the cluster holds it, in the Deployment's shape (workload.normal); a KServe
    service's is the Deployment KServe runs for it."""
    try:
        if target.kserve:
            found = kube.get_json("deployments", selector(dict(target.labels()))).get("items", [])
            return normal(kserve_deployment(target, found), "Deployment")
        got: dict[str, Any] = kube.get_json(f"{RESOURCE[target.kind]}/{target.name}")
    except KubeError as exc:
        if not kube.dry_run:
            raise
        raise KubeError(f"{exc}; to plan without a cluster: --dry-run --from-manifest FILE "
                        f"(e.g. the output of `kubectl get {RESOURCE[target.kind]} {target.name} -o yaml`)") from exc
    return normal(got, target.kind)


def inspect(kube: Kube, target: str, tools_image: str, container: str | None = None,
            strategy: Strategy | None = None, grant_cap: bool = False,
            manifest: dict[str, Any] | None = None, vllm_version: str | None = None) -> Inspection:
    """`manifest`: the deployment as a file holds it (kube offline): no pod, node or log is read,
    and the checks only a cluster can answer are listed as not done."""
    aimed = parse_target(target)
    dep = _read(kube, aimed) if manifest is None else manifest
    name = check_name("deployment", (dep.get("metadata") or {}).get("name"), cluster=manifest is None)
    dep["spec"]["template"] = template = copy.deepcopy(dep["spec"]["template"])
    spec = template["spec"]
    cont = gpu_container(spec, container)
    args = [str(a) for a in cont.get("args") or []]
    command = [str(c) for c in cont.get("command") or []]
    pod = _production_pod(kube, dep) if manifest is None else None
    node, pod_name = (pod or {}).get("spec", {}).get("nodeName"), (pod or {}).get("metadata", {}).get("name")
    claims, chosen = claim_volumes(dep, pod_name)
    spec["volumes"] = [*(spec.get("volumes") or []), *claims]  # a StatefulSet's claims, as its pod mounts them
    ins = Inspection(kube.namespace, name, int(dep["spec"].get("replicas", 1)),
                     template, check_name("container", cont.get("name"), cluster=manifest is None),
                     cont.get("image", ""),
                     command, args, node and check_name("node", node, cluster=True),
                     pod_name and check_name("pod", pod_name, cluster=True),
                     parallel_processes(words([*command, *args])), _server_port(cont, words([*command, *args])),
                     gpu_request(cont), kind=dep.get("kind", "Deployment"),
                     served_for=aimed.ref() if aimed.kserve else None)
    _workload(ins, dep, chosen)
    ins.vllm_version, ins.vllm_version_source = _vllm_version(kube, ins, pod, vllm_version)
    key = api_key(cont, words([*command, *args]))
    if key is not None:
        ins.api_key, ins.api_key_env = key
    _findings(kube, ins, cont, pod, tools_image)
    ins.findings += preflight(kube, ins, grant_cap, strategy == "direct") if manifest is None else \
        without_cluster(ins, grant_cap)
    _choose(ins, strategy)
    return ins


def _workload(ins: Inspection, dep: dict[str, Any], claims: str) -> None:
    """What the workload's kind means for the sister, said before the checks."""
    f, spec = ins.findings, dep["spec"]
    if ins.served_for:
        f.append(Finding("workload", "info", f"{ins.served_for} runs deployment/{ins.deployment} (found by KServe's "
                         "labels); the sister copies its pod template", f"deployment/{ins.deployment} labels"))
    if ins.kind == "StatefulSet":
        f.append(Finding("workload", "info", f"statefulset/{ins.deployment}: the sister copies its pod template"
                         + (f" and mounts {claims} (volumeClaimTemplates)" if claims else ""),
                         "spec.volumeClaimTemplates" if claims else "spec.template"))
    if ins.kind == "LeaderWorkerSet":
        size = as_int(spec.get("groupSize"), 1)
        if size > 1:
            f.append(Finding("workload", "block", f"leaderworkerset/{ins.deployment} runs groups of {size} pods (a "
                             "leader and its workers, one model over several nodes, meeting at the leader's address): "
                             "one sister pod cannot hold a group, and a copied worker would join production's; "
                             "capture a size-1 copy of the leader's template, or a Deployment of it",
                             f"spec.leaderWorkerTemplate.size: {size}"))
        else:
            f.append(Finding("workload", "info", f"leaderworkerset/{ins.deployment}: groups of one pod; the sister "
                             "copies the leader's template", "spec.leaderWorkerTemplate.size: 1"))


def _findings(kube: Kube, ins: Inspection, cont: dict[str, Any], pod: dict[str, Any] | None, tools: str) -> None:
    f = ins.findings
    f.append(_gpu_container(ins, cont))
    sharing = _gpu_sharing(cont)
    if sharing:
        f.append(sharing)
    if not kube.offline:
        f.append(_production_state(ins, pod))
    if ins.template["spec"].get("hostNetwork") is True:
        f.append(Finding("host-network", "block", "the pod template sets hostNetwork: a sister copy binds the same "
                         "host ports as production, on production's node if it is pinned there, so it cannot start "
                         "beside it; capture from a copy of the deployment without hostNetwork",
                         "spec.template.spec.hostNetwork: true"))
    if ins.api_key:
        f.append(Finding("api-key", "info", f"the server wants an API key ({ins.api_key}): the sister's warm-up "
                         "requests carry it, read inside the pod from the same source (never printed or stored)",
                         "the serving command's --api-key, the container's env"))
    if not ins.command:
        f.append(Finding("entrypoint", "warn", "the container sets only args: the image's ENTRYPOINT starts the "
                         "server, so `k8s capture` needs --entrypoint to wrap it",
                         f"args: {' '.join(redact.argv(ins.args))[:160]}"))
    f.append(Finding("replicas", "info" if ins.replicas > 1 else "warn",
                     f"{ins.replicas} replica(s)" + ("" if ins.replicas > 1 else
                                                       ": single replica, strict capture limits apply"),
                     f"{RESOURCE[ins.kind]}/{ins.deployment} .spec.replicas={ins.replicas}"))
    template_env = _env_names(cont)
    admitted: dict[str, str] = {}
    if pod is not None:
        admitted = _env_names(named(pod.get("spec", {}), ins.container))
    injected = {k: v for k, v in {**template_env, **admitted}.items() if k == INJECTION_ENV}
    if injected:
        where = "pod template" if INJECTION_ENV in template_env else "running pod (added at admission, e.g. a webhook)"
        f.append(Finding("injection-in-use", "warn",
                         f"{INJECTION_ENV} is set in the {where}: another profiler owns the driver's single injection "
                         "slot; the sister removes it and checks its own admitted pod again; --direct is impossible",
                         f"{INJECTION_ENV}={injected[INJECTION_ENV]}"))
    else:
        f.append(Finding("injection-free", "ok", f"{INJECTION_ENV} set neither in the template nor in the running pod",
                         f"container {ins.container} env names: {', '.join(sorted(template_env)) or 'none'}"))
    util = option([*ins.command, *ins.args], "--gpu-memory-utilization")
    if util is not None:
        try:
            value = float(util)
        except ValueError:
            value = 0.0
        level: Level = "warn" if value >= GPU_MEM_UTIL_WARN else "ok"
        f.append(Finding("gpu-memory-utilization", level,
                         f"--gpu-memory-utilization {util}" + (": little room left for profiler buffers; keep launch "
                                                               "counts and windows short" if level == "warn" else ""),
                         f"container args: {' '.join(redact.argv(ins.args))[:200]}"))
    log = ""
    if ins.pod:
        log = kube.k("logs", ref("pod", ins.pod), f"--container={ins.container}", "--tail=400", check=False) or ""
    app_cuda = ins.app_cuda = log_cuda_version(log)
    node_cuda = driver = refused = None
    if ins.node:
        node, refused = kube.read(ref("node", ins.node))
        node_cuda, driver = _node_cuda((node or {}).get("metadata", {}).get("labels", {}))
    if refused:
        f.append(unchecked("cuda-driver-skew", f"node {ins.node}'s driver CUDA against the application's "
                           f"({app_cuda or 'unknown'})", refused, "get nodes: a ClusterRole"))
    elif app_cuda and node_cuda and int(app_cuda.split(".")[0]) > int(node_cuda.split(".")[0]):
        f.append(Finding("cuda-driver-skew", "block",
                         f"the application was built for CUDA {app_cuda} but node {ins.node}'s driver supports CUDA "
                         f"{node_cuda}: CUPTI cannot initialise and ncu would record 0 kernels; use an image built "
                         "for the node's CUDA major version or upgrade the driver",
                         f"launch log: CUDA {app_cuda}; node labels: CUDA {node_cuda}, driver {driver}"))
    else:
        f.append(Finding("cuda-driver-skew", "ok" if app_cuda and node_cuda else "info",
                         f"application CUDA {app_cuda or 'unknown'}, "
                         f"node driver supports CUDA {node_cuda or 'unknown'}",
                         f"launch log of {ins.pod or 'no pod'}; node {ins.node or '?'} labels"))
    f.append(_tools_image(tools))
    if ins.vllm_version or ins.vllm_version_source != "not a vLLM server":
        f.append(Finding("vllm-version", "info" if ins.vllm_version else "warn",
                         f"the serving window: {ins.switch.why}", ins.vllm_version_source))


def _tools_image(tools: str) -> Finding:
    """The tools image's ncu, and whether a node can pull it: a name with no registry host is
    Docker Hub's official library, where a locally built tag (`docker build -t NAME`) is not."""
    m = NCU_TAG.search(tools)
    cuda = CUDA_IMAGE.search(tools)
    version = (m.group(1) if m else NCU_OF_CUDA.get(cuda.group(1), "") if cuda else "") or \
        "version unknown (read with ncu --version in the pod)"
    first, slash, _ = tools.partition("/")
    local = first == "localhost" or first.startswith(("localhost:", "127."))
    if not slash or local:
        where = ("names no registry, so a node pulls docker.io/library/" + tools.split("@")[0].split(":")[0] +
                 " (an official Docker Hub image), where a locally built tag is not" if not slash else
                 "is on a registry on this machine, which the nodes do not reach")
        return Finding("tools-image", "warn", f"tools image {tools} {where}: the sister would stop at ErrImagePull; "
                       "push it to a registry the nodes pull from (and pass --pull-secret if private), or keep the "
                       f"default {DEFAULT_TOOLS_IMAGE}", f"ncu {version}")
    return Finding("tools-image", "info", f"tools image {tools}: ncu {version}", "image tag" +
                   ("" if "." in first or ":" in first else " (Docker Hub)"))


def _choose(ins: Inspection, wanted: Strategy | None) -> None:
    injected = any(x.name == "injection-in-use" for x in ins.findings)
    if wanted == "direct":
        if not attachable([*ins.command, *ins.args]) or injected:
            raise KubeError(f"--direct: {ins.deployment} does not run under `ncu --mode launch`"
                            + (" and another profiler holds the injection slot" if injected else "")
                            + "; use the sister (the default)")
        ins.strategy, ins.strategy_reason = "direct", ("the production pod already runs attachable under ncu --mode "
                                                       "launch; a debug sidecar attaches to it (explicit --direct)")
    elif wanted == "attach":
        if ins.tensor_parallel > 1:
            raise KubeError(f"--strategy attach: {ins.deployment} runs {ins.tensor_parallel} GPU worker processes; "
                            "measured on an H200 with ncu 2025.3.1, one attach session connects to one of them and "
                            "the others stay held at their first CUDA call (a TP vLLM would hang in NCCL init); "
                            "use --strategy wrap (the default)")
        ins.strategy, ins.strategy_reason = "attach", ("a sister holding the single-process server under ncu --mode "
                                                       "launch; a sidecar attaches over 127.0.0.1")
    else:
        ins.strategy, ins.strategy_reason = "wrap", (
            "a one-pod sister copied from the production template, its server started under a scoped "
            "`ncu --target-processes all` (every worker process covered, no TCP session); production is not touched")
