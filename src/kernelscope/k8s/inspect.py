"""`kernelscope k8s inspect`: read a deployment and say which capture path is possible, and why,
with the evidence for each finding."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .kubectl import Kube, KubeError

INJECTION_ENV = "CUDA_INJECTION64_PATH"
GPU_MEM_UTIL_WARN = 0.85
# NVIDIA GPU feature discovery labels for the CUDA version the node's driver supports (new, old)
DRIVER_CUDA_LABELS = (("nvidia.com/cuda.runtime-version.major", "nvidia.com/cuda.runtime-version.minor"),
                      ("nvidia.com/cuda.runtime.major", "nvidia.com/cuda.runtime.minor"))
DRIVER_VERSION_LABELS = ("nvidia.com/cuda.driver-version.full", "nvidia.com/cuda.driver.major")
LOG_CUDA = re.compile(r"(?:CUDA(?: runtime)?(?: version)?[ :=]+v?(\d+)\.(\d+))|(?:\+cu(\d{2,3})\b)", re.IGNORECASE)
NCU_TAG = re.compile(r"ncu[-_]?(\d{4}\.\d+(?:\.\d+)?)")


@dataclass(frozen=True)
class Finding:
    name: str
    level: str  # ok | warn | block | info
    message: str
    evidence: str


@dataclass
class Inspection:
    namespace: str
    deployment: str
    replicas: int
    container: str
    image: str
    command: list[str]
    node: str | None
    pod: str | None
    findings: list[Finding] = field(default_factory=list)
    path: str = "sister"
    path_reason: str = ""
    spec: dict[str, Any] = field(default_factory=dict)  # the deployment, for rendering the sister

    def blocked(self) -> list[Finding]:
        return [f for f in self.findings if f.level == "block"]


def parse_target(target: str) -> str:
    kind, _, name = target.rpartition("/")
    if kind not in ("", "deploy", "deployment", "deployments", "deployment.apps"):
        raise KubeError(f"{target}: only deployments are supported (deploy/NAME)")
    return name


def log_cuda_version(log: str) -> str | None:
    """The CUDA version the application was built for, from its launch log (e.g. 'CUDA 13.0' or
    'torch 2.11.0+cu130')."""
    for m in LOG_CUDA.finditer(log):
        if m.group(1):
            return f"{m.group(1)}.{m.group(2)}"
        digits = m.group(3)
        return f"{digits[:-1]}.{digits[-1]}"
    return None


def gpu_memory_utilization(args: list[str]) -> float | None:
    for i, a in enumerate(args):
        if a.startswith("--gpu-memory-utilization"):
            value = a.split("=", 1)[1] if "=" in a else (args[i + 1] if i + 1 < len(args) else "")
            try:
                return float(value)
            except ValueError:
                return None
    return None


def _node_cuda(labels: dict[str, str]) -> tuple[str | None, str | None]:
    cuda = next((f"{labels[a]}.{labels.get(b, '0')}" for a, b in DRIVER_CUDA_LABELS if a in labels), None)
    driver = next((labels[k] for k in DRIVER_VERSION_LABELS if k in labels), None)
    return cuda, driver


def attachable(command: list[str]) -> bool:
    """The container already runs its server under `ncu --mode launch`."""
    return any(c.endswith("ncu") for c in command) and "launch" in command


def inspect(kube: Kube, target: str, tools_image: str, container: str | None = None) -> Inspection:
    name = parse_target(target)
    dep = kube.get_json("deployment", name)
    spec = dep["spec"]["template"]["spec"]
    cont = next((c for c in spec["containers"] if c["name"] == container), None) if container else spec["containers"][0]
    if cont is None:
        raise KubeError(f"deployment {name} has no container {container!r}")
    command = [*cont.get("command", []), *cont.get("args", [])]
    selector = ",".join(f"{k}={v}" for k, v in dep["spec"]["selector"].get("matchLabels", {}).items())
    pods = kube.get_json("pods", "-l", selector).get("items", [])
    pod = next((p for p in pods if p.get("status", {}).get("phase") == "Running"), pods[0] if pods else None)
    ins = Inspection(kube.namespace, name, int(dep["spec"].get("replicas", 1)), cont["name"], cont.get("image", ""),
                     command, (pod or {}).get("spec", {}).get("nodeName"), (pod or {}).get("metadata", {}).get("name"),
                     spec=dep)
    f = ins.findings
    f.append(Finding("replicas", "info" if ins.replicas > 1 else "warn",
                     f"{ins.replicas} replica(s)" + ("" if ins.replicas > 1 else
                                                       ": single replica, strict capture limits apply"),
                     f"deployment/{name} .spec.replicas={ins.replicas}"))
    env = {e["name"]: e.get("value") for e in cont.get("env", [])}
    if INJECTION_ENV in env:
        f.append(Finding("injection-in-use", "warn",
                         f"{INJECTION_ENV} is set: another profiler owns the driver's single injection slot; the "
                         "sister unsets it, the direct path is impossible", f"{INJECTION_ENV}={env[INJECTION_ENV]}"))
    else:
        f.append(Finding("injection-free", "ok", f"{INJECTION_ENV} not set in the pod template",
                         f"container {cont['name']} env: {', '.join(sorted(env)) or 'none'}"))
    util = gpu_memory_utilization(command)
    if util is not None:
        level = "warn" if util >= GPU_MEM_UTIL_WARN else "ok"
        f.append(Finding("gpu-memory-utilization", level,
                         f"--gpu-memory-utilization {util}" + (": little room left for profiler buffers; keep launch "
                                                               "counts and windows short" if level == "warn" else ""),
                         f"container args: {' '.join(command)[:200]}"))
    log = ""
    if pod:
        log = kube.k("logs", pod["metadata"]["name"], "-c", cont["name"], "--tail=400", check=False) or ""
    app_cuda = log_cuda_version(log)
    node_cuda = driver = None
    if ins.node:
        labels = kube.get_json("node", ins.node).get("metadata", {}).get("labels", {})
        node_cuda, driver = _node_cuda(labels)
    if app_cuda and node_cuda and int(app_cuda.split(".")[0]) > int(node_cuda.split(".")[0]):
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
    m = NCU_TAG.search(tools_image)
    ncu = m.group(1) if m else None
    f.append(Finding("tools-ncu", "info",
                     f"tools image {tools_image}: ncu {ncu or 'version unknown (read with ncu --version in the pod)'}; "
                     "kernelscope attaches with --mode attach --hostname 127.0.0.1 (2026.x has no --attach PID)",
                     f"image tag {tools_image}"))
    if attachable(command) and INJECTION_ENV not in env:
        ins.path, ins.path_reason = "direct", ("the deployment already runs under ncu --mode launch and no other "
                                               "injection is set; needs --direct to touch it")
    else:
        ins.path, ins.path_reason = "sister", ("a separate one-replica release of the same image, unselected by the "
                                               "production Service, started attachable; production is not touched")
    return ins
