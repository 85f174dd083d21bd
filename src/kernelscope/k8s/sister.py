"""The sister pod: the production pod template copied whole and patched, never rebuilt from a
subset, so it mounts the same model volume, /dev/shm, env and envFrom (secrets by reference),
service account, runtime class, scheduling, init containers and pull secrets as production.

Patched: our labels only (the production Service never selects it), a capture id and an expiry
(activeDeadlineSeconds, and a label `k8s cleanup --expired` honours), restartPolicy Never, the
other profiler's injection env removed, liveness/startup probes relaxed for the capture window,
ncu copied in by an init container from the tools image, the GPU container's command replaced by
the capture's, and a tools sidecar (tar for `kubectl cp`, ncu for exports) sharing the reports.
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass
from typing import Any

from .. import redact
from . import DEFAULT_NCU_HOME, DEFAULT_TOOLS_IMAGE
from .findings import Inspection, named
from .inspect import INJECTION_ENV
from .kubectl import check_name
from .resources import ADDED_RESOURCES

OWNER_LABEL, OWNER = "kernelscope.dev/owner", "kernelscope"
CAPTURE_LABEL = "kernelscope.dev/capture-id"
EXPIRES_LABEL = "kernelscope.dev/expires"  # unix seconds
SISTER_OF_LABEL = "kernelscope.dev/sister-of"
NCU_DIR = "/kernelscope/ncu"
REPORTS = "/kernelscope/reports"
TOOLS = "kernelscope-tools"
INSTALL = "kernelscope-ncu-install"
NCU_VOLUME, REPORTS_VOLUME = "kernelscope-ncu", "kernelscope-reports"
PROBES = ("livenessProbe", "startupProbe")
API_KEY_ENV = "KERNELSCOPE_API_KEY"  # the tools container's copy of the server's key source (transport.KEY)
TMP_VOLUME = "kernelscope-tmp"  # ncu's temp files and lock (/tmp) when the root filesystem is read-only
# the container-level securityContext keys our containers keep from the GPU container's, so that a
# namespace enforcing the restricted Pod Security profile admits them too (never its added capabilities)
KEPT_SECURITY = ("runAsUser", "runAsGroup", "runAsNonRoot", "allowPrivilegeEscalation", "seccompProfile",
                 "readOnlyRootFilesystem")


@dataclass(frozen=True)
class SisterOptions:
    release: str
    capture_id: str
    tools_image: str = DEFAULT_TOOLS_IMAGE
    ncu_home: str = DEFAULT_NCU_HOME  # where ncu lives in the tools image (copied into the sister)
    ncu_in_image: str | None = None  # or: an ncu already in the serving and tools images (no copy)
    pull_secret: str | None = None
    grant_profiling_cap: bool = False
    ttl_s: int = 3600
    env: tuple[tuple[str, str], ...] = ()  # set in the GPU container (an older vLLM's CUDA-profiler switch)
    drop_env: tuple[str, ...] = ()  # removed from it (what would win over that switch)

    @property
    def ncu(self) -> str:
        """The ncu binary inside the sister's containers."""
        return self.ncu_in_image or f"{NCU_DIR}/ncu"


def expires_at(labels: dict[str, str]) -> int | None:
    """A sister's expiry in unix seconds, from the label `labels` below writes; None for a label
    that is absent or not such a number (`never`, 20 digits): the pod's expiry is unknown."""
    raw = labels.get(EXPIRES_LABEL, "")
    return int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= 11 else None


def labels(ins: Inspection, opts: SisterOptions, now: float | None = None) -> dict[str, str]:
    expires = int((now or time.time()) + opts.ttl_s)
    return {"app.kubernetes.io/name": "kernelscope-sister", "app.kubernetes.io/instance": opts.release,
            OWNER_LABEL: OWNER, CAPTURE_LABEL: opts.capture_id, EXPIRES_LABEL: str(expires),
            SISTER_OF_LABEL: ins.deployment[:63].rstrip("-.")}


def _relax(probe: dict[str, Any], window_s: int) -> dict[str, Any]:
    """Keep the probe, but let it fail for the whole capture window before the kubelet acts."""
    period = int(probe.get("periodSeconds", 10))
    probe["failureThreshold"] = max(int(probe.get("failureThreshold", 3)), math.ceil(window_s / max(period, 1)))
    return probe


def _ours(gpu: dict[str, Any]) -> dict[str, Any]:
    """What each container kernelscope adds carries: requests and limits (a quota on cpu/memory
    rejects a container with none), and the GPU container's restrictive securityContext, with every
    capability dropped (the restricted profile's rule)."""
    sc = {k: v for k, v in (gpu.get("securityContext") or {}).items() if k in KEPT_SECURITY}
    if sc:
        sc["capabilities"] = {"drop": ["ALL"]}
    return {"resources": copy.deepcopy(ADDED_RESOURCES), **({"securityContext": sc} if sc else {})}


def _key_env(ins: Inspection) -> list[dict[str, Any]]:
    """The server's API-key source as an env entry of ours (a reference, as the deployment gives it),
    for a container warm-ups are sent from; none when the server wants no key."""
    return [{"name": API_KEY_ENV, **copy.deepcopy(ins.api_key_env)}] if ins.api_key_env else []


def read_only_root(ins: Inspection) -> bool:
    """The GPU container cannot write its root filesystem, where ncu keeps its temp files (/tmp)."""
    sc = named(ins.template["spec"], ins.container).get("securityContext") or {}
    return sc.get("readOnlyRootFilesystem") is True


def pod_spec(ins: Inspection, opts: SisterOptions, gpu_command: list[str]) -> dict[str, Any]:
    spec: dict[str, Any] = copy.deepcopy(ins.template["spec"])
    gpu = named(spec, ins.container)
    spec["restartPolicy"] = "Never"
    spec["activeDeadlineSeconds"] = opts.ttl_s
    spec.pop("nodeName", None)
    if ins.pin_node:
        spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), "kubernetes.io/hostname": ins.pin_node}
    secrets = [s for s in spec.get("imagePullSecrets") or [] if s.get("name") != opts.pull_secret]
    spec["imagePullSecrets"] = secrets + ([{"name": opts.pull_secret}] if opts.pull_secret else [])
    if not spec["imagePullSecrets"]:
        del spec["imagePullSecrets"]
    spec["volumes"] = [*(spec.get("volumes") or []), {"name": REPORTS_VOLUME, "emptyDir": {}}]
    mounts = [{"name": REPORTS_VOLUME, "mountPath": REPORTS}]  # the GPU container's and the tools sidecar's
    if not opts.ncu_in_image:
        spec["volumes"].append({"name": NCU_VOLUME, "emptyDir": {}})
        mounts.append({"name": NCU_VOLUME, "mountPath": NCU_DIR})
        spec["initContainers"] = [*(spec.get("initContainers") or []), {
            "name": INSTALL, "image": opts.tools_image,
            "command": ["cp", "-a", f"{opts.ncu_home.rstrip('/')}/.", f"{NCU_DIR}/"],
            "volumeMounts": [{"name": NCU_VOLUME, "mountPath": NCU_DIR}], **_ours(gpu)}]
    writable = any(m.get("mountPath") in ("/tmp", "/tmp/") for m in gpu.get("volumeMounts") or [])
    if read_only_root(ins) and not writable:  # ncu writes /tmp (temp files, its lock): a writable emptyDir there
        spec["volumes"].append({"name": TMP_VOLUME, "emptyDir": {}})
        mounts.append({"name": TMP_VOLUME, "mountPath": "/tmp"})
    for c in [*(spec.get("initContainers") or []), *spec["containers"]]:
        if "env" in c:
            c["env"] = [e for e in c["env"] if e.get("name") != INJECTION_ENV]
    for c in spec["containers"]:
        for probe in PROBES:
            if probe in c:
                c[probe] = _relax(c[probe], opts.ttl_s)
        if c.get("name") != ins.container:
            continue
        c["command"] = list(gpu_command)
        c.pop("args", None)
        if ins.api_key_env:  # warm-ups may be sent from here too, when the tools image has no client
            c["env"] = [*(c.get("env") or []), *_key_env(ins)]
        if opts.env or opts.drop_env:
            ours = {name for name, _ in opts.env} | set(opts.drop_env)
            c["env"] = [e for e in c.get("env") or [] if e.get("name") not in ours] + \
                [{"name": name, "value": value} for name, value in opts.env]
        c["volumeMounts"] = [*(c.get("volumeMounts") or []), *copy.deepcopy(mounts)]
        if opts.grant_profiling_cap:
            sc = c.setdefault("securityContext", {})
            caps = sc.setdefault("capabilities", {})
            caps["add"] = sorted({*caps.get("add", []), "SYS_ADMIN"})
    key = _key_env(ins)
    spec["containers"].append({
        "name": TOOLS, "image": opts.tools_image, "command": ["sleep", str(opts.ttl_s)],
        **({"env": key} if key else {}), **({"envFrom": copy.deepcopy(gpu["envFrom"])} if gpu.get("envFrom") else {}),
        "volumeMounts": mounts, **_ours(gpu)})
    return spec


def values(ins: Inspection, opts: SisterOptions, gpu_command: list[str], now: float | None = None) -> dict[str, Any]:
    """Helm values for templates/pod.yaml."""
    check_name("release", opts.release)
    annotations = {k: v for k, v in (ins.template.get("metadata", {}).get("annotations") or {}).items()
                   if k != redact.LAST_APPLIED}  # the deployment as last applied, env values included
    return {"labels": labels(ins, opts, now), "annotations": annotations, "spec": pod_spec(ins, opts, gpu_command)}


def redacted(vals: dict[str, Any]) -> dict[str, Any]:
    """The values as they may be written or printed (see redact.kube): literal values of secret
    env and headers masked (secretKeyRef and other references carry no value and stay), commands'
    and annotations' secrets masked."""
    out: dict[str, Any] = redact.kube(vals)
    return out


def pod(release: str, vals: dict[str, Any]) -> dict[str, Any]:
    """The Pod that templates/pod.yaml renders from these values (a dry run shows it; a test checks
    it against `helm template`)."""
    meta: dict[str, Any] = {"name": release, "labels": vals["labels"]}
    if vals.get("annotations"):
        meta["annotations"] = vals["annotations"]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": vals["spec"]}


def chart_path() -> str:
    from importlib import resources

    return str(resources.files(__package__).joinpath("chart"))
