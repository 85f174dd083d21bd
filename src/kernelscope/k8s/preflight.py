"""What a live capture needs before anything is installed, checked with the user's own
credentials: RBAC for every verb, a free GPU on an eligible node, GPU quota, a model volume that
can be mounted twice, profiling counters no DCGM exporter holds, and permission to read them."""

from __future__ import annotations

from .findings import GPU, Finding, Inspection, as_int, gpu_request, gpu_resource, named, unchecked
from .kubectl import Access, Kube, ref
from .resources import ADDED_RESOURCES, fmt, quantity, sister_requests
from .workload import RESOURCE

DCGM = ("dcgm-exporter", "dcgm")
PROFILING_CAP = "SYS_ADMIN"
CLUSTER_ROLE = "a ClusterRole (cluster-scoped reads a namespace Role cannot grant)"
# Every kubectl permission a capture needs: (verb, resource, why). `helm install` stores its release
# in a Secret, so the Secret verbs are Helm's.
RBAC: tuple[tuple[str, str, str], ...] = (
    ("get", "deployments.apps", "read the production template"),
    ("list", "pods", "find the production and sister pods"),
    ("get", "pods/log", "launch logs: the application's CUDA version, ncu errors"),
    ("create", "pods", "the sister pod (through helm)"),
    ("delete", "pods", "remove the sister (through helm)"),
    ("create", "pods/exec", "reports, exports and warm-up requests inside the sister"),
    ("create", "secrets", "helm's release record"),
    ("delete", "secrets", "helm's release record"),
    ("list", "secrets", "find our releases (k8s cleanup)"),
)
# What only some checks read: a namespace-scoped user without them still captures, and those checks
# say they could not run. (verb, resource, in every namespace, what is left unchecked)
RBAC_CHECKS: tuple[tuple[str, str, bool, str], ...] = (
    ("get", "nodes", False, "the node driver's CUDA, free GPUs"),
    ("list", "pods", True, "free GPUs (other namespaces' pods), a DCGM exporter on the node"),
    ("list", "resourcequotas", False, "quota"),
    ("list", "limitranges", False, "per-container limits"),
    ("get", "persistentvolumeclaims", False, "whether the model volume can be mounted twice"),
)
ASKED = "SelfSubjectAccessReviews (what kubectl auth can-i asks), namespace {}"
RBAC_DIRECT = (("patch", "pods/ephemeralcontainers", "--direct: the debug sidecar in the production pod"),)


def rbac(kube: Kube, direct: bool = False) -> list[Finding]:
    needed = RBAC + (RBAC_DIRECT if direct else ())
    answers = kube.can_i(*(Access(verb, resource) for verb, resource, _ in needed),
                         *(Access(verb, resource, everywhere) for verb, resource, everywhere, _ in RBAC_CHECKS))
    denied, unknown, asked = [], [], ASKED.format(kube.namespace)
    for (verb, resource, why), answer in zip(needed, answers[:len(needed)], strict=True):
        if answer == "no":
            denied.append(f"{verb} {resource} ({why})")
        elif answer != "yes":
            unknown.append(f"{verb} {resource}")
    optional = [f"{verb} {resource}{' at cluster scope' if everywhere else ''} ({left})"
                for (verb, resource, everywhere, left), answer in zip(RBAC_CHECKS, answers[len(needed):], strict=True)
                if answer == "no"]
    found = [Finding("rbac-checks", "unchecked", "could not check what these reads answer (the capture can go on "
                     "without them; each check below says so): " + "; ".join(optional),
                     asked)] if optional else []
    if denied:
        return [Finding("rbac", "block", "missing permissions: " + "; ".join(denied),
                        asked), *found]
    if unknown:
        return [unchecked("rbac", f"{len(unknown)} permission(s): " + ", ".join(unknown),
                          "the API server did not answer SelfSubjectAccessReview",
                          "an API server that serves authorization.k8s.io/v1"), *found]
    return [Finding("rbac", "ok", "every verb the capture needs is allowed",
                    asked + " (docs/guide.md lists them)"), *found]


def capacity(kube: Kube, ins: Inspection, pinned: str | None) -> list[Finding]:
    """Free nvidia.com/gpu on the nodes the sister could land on, against what it asks for."""
    if ins.gpus == 0:
        return [Finding("gpu-capacity", "info", "the GPU container requests no nvidia.com/gpu; capacity not "
                         "checked", "container resources")]
    wanted = gpu_resource(named(ins.template["spec"], ins.container)) or GPU
    what = f"free GPUs for the sister ({ins.gpus} x {wanted})"
    nodes, why = kube.read("nodes")
    if nodes is None:
        return [unchecked("gpu-capacity", what, why or "", f"get/list nodes: {CLUSTER_ROLE}; without it the sister "
                          "may wait Pending, and kernelscope stops at Unschedulable with the scheduler's message")]
    running, why = kube.read("pods", "-A", "--field-selector=status.phase=Running")
    if running is None:
        return [unchecked("gpu-capacity", what, f"the GPUs other namespaces' pods hold: {why}",
                          f"list pods at cluster scope: {CLUSTER_ROLE}")]
    selector = ins.template["spec"].get("nodeSelector") or {}
    pods = running.get("items", [])
    free: dict[str, int] = {}
    for node in nodes.get("items", []):
        name = node["metadata"]["name"]
        labels = node["metadata"].get("labels") or {}
        if pinned and name != pinned or any(labels.get(k) != v for k, v in selector.items()):
            continue
        total = as_int((node.get("status", {}).get("allocatable") or {}).get(wanted))
        used = sum(gpu_request(c, wanted) for p in pods if p.get("spec", {}).get("nodeName") == name
                   for c in p["spec"].get("containers", []))
        free[name] = total - used
    fits = {n: g for n, g in free.items() if g >= ins.gpus}
    evidence = ", ".join(f"{n}: {g} free" for n, g in free.items()) or "no eligible node"
    if fits:
        return [Finding("gpu-capacity", "ok", f"{len(fits)} eligible node(s) with >= {ins.gpus} free GPU(s)", evidence)]
    return [Finding("gpu-capacity", "warn", f"no eligible node has {ins.gpus} free GPU(s) now: the sister would wait "
                     "Pending (kernelscope stops at Unschedulable with the scheduler's message)", evidence)]


def quota(kube: Kube, ins: Inspection) -> list[Finding]:
    """Every ResourceQuota against what the sister adds: production's containers (copied) and ours."""
    doc, why = kube.read("resourcequotas")
    if doc is None:
        return [unchecked("quota", f"ResourceQuota in {ins.namespace}", why or "", "list resourcequotas")]
    wants = sister_requests(ins)
    for q in doc.get("items", []):
        hard = (q.get("status", {}).get("hard") or q.get("spec", {}).get("hard") or {})
        used = (q.get("status", {}).get("used") or {})
        for key, limit in hard.items():
            need = wants.get(key)
            left = None if need is None else quantity(limit) - quantity(used.get(key, "0"))
            if need is not None and left is not None and left < need:
                return [Finding("quota", "block", f"quota {q['metadata']['name']} leaves {fmt(left)} {key} for a "
                                 f"sister needing {fmt(need)} (production's containers, copied, and kernelscope's)",
                                 f"{key}: used {used.get(key, 0)} of {limit}")]
    return [Finding("quota", "ok", f"no ResourceQuota in {ins.namespace} is short of what the sister adds "
                     f"({GPU}: {ins.gpus})", f"{len(doc.get('items', []))} quota object(s)")]


def limit_ranges(kube: Kube, ins: Inspection) -> list[Finding]:
    """A LimitRange's per-container max/min against kernelscope's own containers (production's
    already pass it): a sister rejected at admission is said here, before anything is installed."""
    doc, why = kube.read("limitranges")
    if doc is None:
        return [unchecked("limit-range", f"LimitRanges in {ins.namespace}", why or "", "list limitranges")]
    ours = ADDED_RESOURCES
    for lr in doc.get("items", []):
        for item in (lr.get("spec") or {}).get("limits") or []:
            if item.get("type") != "Container":
                continue
            for res, cap in (item.get("max") or {}).items():
                if quantity(ours["limits"].get(res, "0")) > quantity(cap):
                    return [Finding("limit-range", "block", f"LimitRange {lr['metadata']['name']} allows a container "
                                     f"at most {res} {cap}; kernelscope's tools containers ask {ours['limits'][res]}",
                                     f"spec.limits[type=Container].max.{res}: {cap}")]
            for res, floor in (item.get("min") or {}).items():
                if quantity(ours["requests"].get(res, "0")) < quantity(floor):
                    return [Finding("limit-range", "block", f"LimitRange {lr['metadata']['name']} wants a container "
                                     f"to request at least {res} {floor}; kernelscope's tools containers ask "
                                     f"{ours['requests'].get(res, 'nothing')}",
                                     f"spec.limits[type=Container].min.{res}: {floor}")]
    return [Finding("limit-range", "ok", "kernelscope's containers fit every LimitRange "
                     f"(requests {ours['requests']}, limits {ours['limits']})",
                     f"{len(doc.get('items', []))} LimitRange object(s)")]


def dcgm(kube: Kube, node: str | None) -> list[Finding]:
    what = "whether a DCGM exporter holds the node's profiling counters"
    if not node:
        return [unchecked("dcgm-exporter", what, "no production pod runs, so its node is not known", "a running "
                          "production pod")]
    doc, why = kube.read("pods", "-A", f"--field-selector=spec.nodeName={node}")
    if doc is None:
        return [unchecked("dcgm-exporter", what, why or "", f"list pods at cluster scope: {CLUSTER_ROLE}; or ask "
                          "the cluster's admin whether dcgm-exporter runs with profiling metrics")]
    hits = [f"{p['metadata'].get('namespace')}/{p['metadata']['name']}" for p in doc.get("items", [])
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
    non_root = user not in (None, 0) or bool(ctx.get("runAsNonRoot"))
    evidence = f"securityContext: {ctx or 'none'}"
    if non_root and (grant_cap or PROFILING_CAP in caps or ctx.get("privileged")):
        return [Finding("counter-permission", "warn", f"the GPU container runs as a non-root user (runAsUser "
                         f"{user if user is not None else 'set by runAsNonRoot'}): a capability Kubernetes adds "
                         "reaches a root process only (a non-root process starts with none effective), so "
                         + ("--grant-profiling-cap does not let ncu read counters here" if grant_cap else
                            f"{PROFILING_CAP} in its securityContext does not either")
                         + "; ncu fails with ERR_NVGPUCTRPERM unless the node's driver sets "
                         "NVreg_RestrictProfilingToAdminUsers=0 (RmProfilingAdminOnly=0)", evidence)]
    if PROFILING_CAP in caps or ctx.get("privileged") or grant_cap:
        return [Finding("counter-permission", "ok", "the sister's GPU container (root) may read GPU counters"
                         + (" (--grant-profiling-cap adds CAP_SYS_ADMIN to the sister only)" if grant_cap else ""),
                         evidence)]
    if non_root:
        return [Finding("counter-permission", "warn", "the GPU container runs as a non-root user: unless the node's "
                         "driver sets NVreg_RestrictProfilingToAdminUsers=0 (RmProfilingAdminOnly=0), ncu fails with "
                         "ERR_NVGPUCTRPERM (a capability would not help a non-root process; the node's driver "
                         "setting is what does)", evidence)]
    return [Finding("counter-permission", "info", "the GPU container runs as root: counters are readable unless a "
                     "restrictive PodSecurity or runtime drops that; an ERR_NVGPUCTRPERM is diagnosed if it happens",
                     evidence)]


def volumes(kube: Kube, ins: Inspection) -> tuple[list[Finding], str | None]:
    """PVCs the sister mounts too: ReadWriteOnce can be shared on the same node only (so the sister
    is pinned there), ReadWriteOncePod cannot be shared at all."""
    findings, pin = [], None
    for vol in ins.template["spec"].get("volumes") or []:
        claim = (vol.get("persistentVolumeClaim") or {}).get("claimName")
        if not claim:
            continue
        pvc, why = kube.read(ref("pvc", claim, cluster=True))
        modes = (pvc or {}).get("spec", {}).get("accessModes") or (pvc or {}).get("status", {}).get("accessModes") \
            or []
        if pvc is None:
            findings.append(unchecked("model-volume", f"PVC {claim}'s access mode (ReadWriteOnce pins the sister to "
                                      "production's node)", why or "", "get persistentvolumeclaims"))
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
    return [*rbac(kube, direct), *vol, *capacity(kube, ins, ins.pin_node), *quota(kube, ins),
            *limit_ranges(kube, ins), *dcgm(kube, ins.node), *counters(ins, grant_cap)]


UNCHECKED = ("RBAC (kubectl auth can-i)", "the model volume's access mode (a ReadWriteOnce PVC pins the sister to "
             "production's node)", "free GPUs on an eligible node", "quota", "LimitRanges",
             "a DCGM exporter on the node",
             "the node driver's CUDA against the application's")


def without_cluster(ins: Inspection, grant_cap: bool) -> list[Finding]:
    """A plan from a manifest file: the template's own checks only, and the cluster's named as not done."""
    return [Finding("cluster-checks", "info", "not checked, no cluster was read: " + "; ".join(UNCHECKED) +
                    f"; `kernelscope k8s inspect -n {ins.namespace} {RESOURCE[ins.kind]}/{ins.deployment}` checks them",
                    "--from-manifest: the deployment as the file holds it, no production pod"),
            *counters(ins, grant_cap)]
