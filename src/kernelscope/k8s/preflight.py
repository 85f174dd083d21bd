"""What a live capture needs before anything is installed, checked with the user's own
credentials: RBAC for every verb, a free GPU on an eligible node, GPU quota, a model volume that
can be mounted twice, profiling counters no DCGM exporter holds, and permission to read them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .findings import GPU, Finding, as_int, gpu_request, named
from .kubectl import Kube, ref

if TYPE_CHECKING:
    from .inspect import Inspection

DCGM = ("dcgm-exporter", "dcgm")
PROFILING_CAP = "SYS_ADMIN"
# Every kubectl permission a capture needs: (verb, resource, why). `helm install` stores its release
# in a Secret, so the Secret verbs are Helm's.
RBAC: tuple[tuple[str, str, str], ...] = (
    ("get", "deployments", "read the production template"),
    ("list", "pods", "find the production and sister pods"),
    ("get", "pods/log", "launch logs: the application's CUDA version, ncu errors"),
    ("create", "pods", "the sister pod (through helm)"),
    ("delete", "pods", "remove the sister (through helm)"),
    ("create", "pods/exec", "reports, exports and warm-up requests inside the sister"),
    ("create", "secrets", "helm's release record"),
    ("delete", "secrets", "helm's release record"),
    ("list", "secrets", "find our releases (k8s cleanup)"),
    ("get", "nodes", "node driver version, GPU capacity"),
    ("list", "resourcequotas", "GPU quota"),
    ("get", "persistentvolumeclaims", "whether the model volume can be mounted twice"),
)
RBAC_DIRECT = (("patch", "pods/ephemeralcontainers", "--direct: the debug sidecar in the production pod"),)


def rbac(kube: Kube, direct: bool = False) -> list[Finding]:
    denied, unknown = [], []
    for verb, resource, why in RBAC + (RBAC_DIRECT if direct else ()):
        out = kube.k("auth", "can-i", verb, resource, check=False)
        answer = (out or "").strip().splitlines()[-1:] or [""]
        if answer[0] == "no":
            denied.append(f"{verb} {resource} ({why})")
        elif answer[0] != "yes":
            unknown.append(f"{verb} {resource}")
    if denied:
        return [Finding("rbac", "block", "missing permissions: " + "; ".join(denied),
                         f"kubectl auth can-i, namespace {kube.namespace}")]
    if unknown:
        return [Finding("rbac", "info", f"could not check {len(unknown)} permission(s) (the API server did not "
                         "answer SelfSubjectAccessReview): " + ", ".join(unknown), "kubectl auth can-i")]
    return [Finding("rbac", "ok", "every verb the capture needs is allowed", "kubectl auth can-i (README lists them)")]


def capacity(kube: Kube, ins: Inspection, pinned: str | None) -> list[Finding]:
    """Free nvidia.com/gpu on the nodes the sister could land on, against what it asks for."""
    if ins.gpus == 0:
        return [Finding("gpu-capacity", "info", "the GPU container requests no nvidia.com/gpu; capacity not "
                         "checked", "container resources")]
    nodes = kube.get_json("nodes", check=False).get("items", [])
    selector = ins.template["spec"].get("nodeSelector") or {}
    pods = kube.get_json("pods", "-A", "--field-selector=status.phase=Running", check=False).get("items", [])
    free: dict[str, int] = {}
    for node in nodes:
        name = node["metadata"]["name"]
        labels = node["metadata"].get("labels") or {}
        if pinned and name != pinned or any(labels.get(k) != v for k, v in selector.items()):
            continue
        total = as_int((node.get("status", {}).get("allocatable") or {}).get(GPU))
        used = sum(gpu_request(c) for p in pods if p.get("spec", {}).get("nodeName") == name
                   for c in p["spec"].get("containers", []))
        free[name] = total - used
    fits = {n: g for n, g in free.items() if g >= ins.gpus}
    evidence = ", ".join(f"{n}: {g} free" for n, g in free.items()) or "no eligible node"
    if fits:
        return [Finding("gpu-capacity", "ok", f"{len(fits)} eligible node(s) with >= {ins.gpus} free GPU(s)", evidence)]
    return [Finding("gpu-capacity", "warn", f"no eligible node has {ins.gpus} free GPU(s) now: the sister would wait "
                     "Pending (kernelscope stops at Unschedulable with the scheduler's message)", evidence)]


def quota(kube: Kube, ins: Inspection) -> list[Finding]:
    doc = kube.get_json("resourcequotas", check=False)
    for q in doc.get("items", []):
        hard = (q.get("status", {}).get("hard") or {})
        used = (q.get("status", {}).get("used") or {})
        for key in (f"requests.{GPU}", f"limits.{GPU}"):
            left = as_int(hard.get(key)) - as_int(used.get(key, 0))
            if key in hard and left < ins.gpus:
                return [Finding("gpu-quota", "block", f"quota {q['metadata']['name']} leaves "
                                 f"{left} {key} for a sister needing {ins.gpus}",
                                 f"{key}: used {used.get(key, 0)} of {hard[key]}")]
    return [Finding("gpu-quota", "ok", f"no ResourceQuota limits {GPU} below {ins.gpus} in {ins.namespace}",
                     f"{len(doc.get('items', []))} quota object(s)")]


def dcgm(kube: Kube, node: str | None) -> list[Finding]:
    if not node:
        return []
    pods = kube.get_json("pods", "-A", f"--field-selector=spec.nodeName={node}", check=False).get("items", [])
    hits = [f"{p['metadata'].get('namespace')}/{p['metadata']['name']}" for p in pods
            if any(d in p["metadata"]["name"] for d in DCGM)
            or any(d in str(v) for v in (p["metadata"].get("labels") or {}).values() for d in DCGM)]
    if hits:
        return [Finding("dcgm-exporter", "warn", "a DCGM exporter runs on the node and holds the profiling counters "
                         "(ncu then fails to read them): pause it for the capture with `dcgmi profile --pause` "
                         "(and `--resume` after), or capture on another node", ", ".join(hits))]
    return [Finding("dcgm-exporter", "ok", f"no DCGM exporter pod on node {node}", "pods on the node")]


def counters(ins: Inspection, grant_cap: bool) -> list[Finding]:
    """Reading GPU counters needs root or CAP_SYS_ADMIN unless the node's driver allows everyone
    (NVreg_RestrictProfilingToAdminUsers=0); ncu otherwise fails with ERR_NVGPUCTRPERM."""
    cont = named(ins.template["spec"], ins.container)
    ctx = {**(ins.template["spec"].get("securityContext") or {}), **(cont.get("securityContext") or {})}
    caps = (ctx.get("capabilities") or {}).get("add") or []
    user = ctx.get("runAsUser")
    if PROFILING_CAP in caps or ctx.get("privileged") or grant_cap:
        return [Finding("counter-permission", "ok", "the sister's GPU container may read GPU counters"
                         + (" (--grant-profiling-cap adds CAP_SYS_ADMIN to the sister only)" if grant_cap else ""),
                         f"securityContext: {ctx or 'none'}")]
    if user not in (None, 0) or ctx.get("runAsNonRoot"):
        return [Finding("counter-permission", "warn", "the GPU container runs as a non-root user: unless the node's "
                         "driver sets NVreg_RestrictProfilingToAdminUsers=0 (RmProfilingAdminOnly=0), ncu fails with "
                         "ERR_NVGPUCTRPERM; opt in with --grant-profiling-cap (CAP_SYS_ADMIN on the sister only)",
                         f"securityContext: {ctx}")]
    return [Finding("counter-permission", "info", "the GPU container runs as root: counters are readable unless a "
                     "restrictive PodSecurity or runtime drops that; an ERR_NVGPUCTRPERM is diagnosed if it happens",
                     f"securityContext: {ctx or 'none'}")]


def volumes(kube: Kube, ins: Inspection) -> tuple[list[Finding], str | None]:
    """PVCs the sister mounts too: ReadWriteOnce can be shared on the same node only (so the sister
    is pinned there), ReadWriteOncePod cannot be shared at all."""
    findings, pin = [], None
    for vol in ins.template["spec"].get("volumes") or []:
        claim = (vol.get("persistentVolumeClaim") or {}).get("claimName")
        if not claim:
            continue
        pvc = kube.get_json(ref("pvc", claim, cluster=True), check=False)
        modes = pvc.get("spec", {}).get("accessModes") or pvc.get("status", {}).get("accessModes") or []
        if not pvc:
            findings.append(Finding("model-volume", "info", f"PVC {claim} not readable: access mode unknown",
                                     f"volume {vol.get('name')}"))
        elif "ReadWriteOncePod" in modes:
            findings.append(Finding("model-volume", "block", f"PVC {claim} is ReadWriteOncePod: a second pod cannot "
                                     "mount it; options: a ReadOnlyMany/ReadWriteMany copy of the model, or "
                                     "--direct on a production pod started attachable", f"accessModes {modes}"))
        elif modes == ["ReadWriteOnce"] or ("ReadWriteOnce" in modes and "ReadWriteMany" not in modes
                                            and "ReadOnlyMany" not in modes):
            pin = ins.node
            findings.append(Finding("model-volume", "warn" if pin else "block",
                                     f"PVC {claim} is ReadWriteOnce: only pods on one node can mount it, so the sister "
                                     + (f"is pinned to {pin}, where production runs (it needs a free GPU there)"
                                        if pin else "cannot be placed (no running production pod to share a node "
                                        "with); options: a ReadWriteMany copy of the model"), f"accessModes {modes}"))
        else:
            findings.append(Finding("model-volume", "ok", f"PVC {claim} can be mounted by a second pod",
                                     f"accessModes {modes}"))
    return findings, pin


def preflight(kube: Kube, ins: Inspection, grant_cap: bool = False, direct: bool = False) -> list[Finding]:
    """Every check, in order; sets `ins.pin_node` when a ReadWriteOnce model volume needs it."""
    vol, ins.pin_node = volumes(kube, ins)
    return [*rbac(kube, direct), *vol, *capacity(kube, ins, ins.pin_node), *quota(kube, ins), *dcgm(kube, ins.node),
            *counters(ins, grant_cap)]


UNCHECKED = ("RBAC (kubectl auth can-i)", "the model volume's access mode (a ReadWriteOnce PVC pins the sister to "
             "production's node)", "free GPUs on an eligible node", "GPU quota", "a DCGM exporter on the node",
             "the node driver's CUDA against the application's")


def without_cluster(ins: Inspection, grant_cap: bool) -> list[Finding]:
    """A plan from a manifest file: the template's own checks only, and the cluster's named as not done."""
    return [Finding("cluster-checks", "info", "not checked, no cluster was read: " + "; ".join(UNCHECKED) +
                    f"; `kernelscope k8s inspect -n {ins.namespace} deploy/{ins.deployment}` checks them",
                    "--from-manifest: the deployment as the file holds it, no production pod"),
            *counters(ins, grant_cap)]
