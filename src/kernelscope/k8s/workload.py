"""What runs the model, whatever kind the user names: a Deployment, a StatefulSet, a LeaderWorkerSet
(one pod a group: the leader's template), or a KServe LLMInferenceService / InferenceService (the
Deployment KServe made for it, found by KServe's own labels). Each is read as one shape: metadata,
spec.replicas, spec.selector.matchLabels and spec.template, with `kind` kept, so inspect and the
sister treat them alike and every safety rule applies to each."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from ..errors import KubeError
from .kubectl import check_name

KINDS = {
    "Deployment": ("deploy", "deployment", "deployments", "deployment.apps", "deployments.apps"),
    "StatefulSet": ("sts", "statefulset", "statefulsets", "statefulset.apps", "statefulsets.apps"),
    "LeaderWorkerSet": ("lws", "leaderworkerset", "leaderworkersets", "leaderworkerset.x-k8s.io",
                        "leaderworkersets.leaderworkerset.x-k8s.io"),
    "LLMInferenceService": ("llmisvc", "llminferenceservice", "llminferenceservices",
                            "llminferenceservice.serving.kserve.io"),
    "InferenceService": ("isvc", "inferenceservice", "inferenceservices", "inferenceservice.serving.kserve.io"),
}
RESOURCE = {"Deployment": "deployment", "StatefulSet": "statefulset", "LeaderWorkerSet": "leaderworkerset",
            "LLMInferenceService": "llminferenceservice", "InferenceService": "inferenceservice"}
LWS_NAME, LWS_INDEX = "leaderworkerset.sigs.k8s.io/name", "leaderworkerset.sigs.k8s.io/worker-index"
# the labels KServe puts on the Deployment it runs: an LLMInferenceService's (<name>-kserve, and
# <name>-kserve-prefill with P/D), a RawDeployment InferenceService's (<name>-predictor)
KSERVE_LABELS = {"LLMInferenceService": {"app.kubernetes.io/name": "{name}",
                                         "app.kubernetes.io/part-of": "llminferenceservice"},
                 "InferenceService": {"serving.kserve.io/inferenceservice": "{name}"}}


@dataclass(frozen=True)
class Target:
    kind: str  # one of KINDS
    name: str

    @property
    def kserve(self) -> bool:
        return self.kind in KSERVE_LABELS

    def ref(self) -> str:
        return f"{RESOURCE[self.kind]}/{self.name}"

    def labels(self) -> dict[str, str]:
        """KServe's labels on the Deployment it runs for this service."""
        return {k: v.format(name=self.name) for k, v in KSERVE_LABELS[self.kind].items()}


def parse_target(target: str) -> Target:
    kind, _, name = target.rpartition("/")
    for canonical, words in KINDS.items():
        if kind.lower() in ("", *words) and (kind or canonical == "Deployment"):
            return Target(canonical, check_name("deployment", name))
    raise KubeError(f"{target}: not a kind kernelscope reads; name one of deploy/NAME, statefulset/NAME, "
                    "leaderworkerset/NAME, llminferenceservice/NAME, inferenceservice/NAME")


def kserve_deployment(target: Target, deployments: list[dict[str, Any]]) -> dict[str, Any]:
    """The Deployment KServe runs for the service, among those carrying its labels: the decode one
    (<name>-kserve) over a P/D pair's prefill one, which is named so it can be captured on its own."""
    main = [d for d in deployments if not str((d.get("metadata") or {}).get("name", "")).endswith("-prefill")]
    if not deployments:
        sel = ",".join(f"{k}={v}" for k, v in target.labels().items())
        raise KubeError(f"{target.ref()}: no Deployment carries KServe's labels ({sel}): a Serverless (Knative) "
                        "InferenceService runs Revisions, not a Deployment kernelscope can copy; capture a "
                        "RawDeployment one, or name the Deployment (deploy/NAME)")
    if len(main) != 1:
        names = ", ".join(str((d.get("metadata") or {}).get("name")) for d in deployments)
        raise KubeError(f"{target.ref()}: KServe runs several Deployments ({names}); name one (deploy/NAME)")
    return main[0]


def normal(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    """The object in the Deployment's shape (metadata, spec.replicas/selector/template), `kind` kept.
    A LeaderWorkerSet's template is its leader's (its workers' when it has no leader template), its
    replicas its groups, its selector the group leaders'."""
    if kind != "LeaderWorkerSet":
        return {**obj, "kind": kind}
    spec = obj.get("spec") or {}
    lwt = spec.get("leaderWorkerTemplate") or {}
    template = lwt.get("leaderTemplate") or lwt.get("workerTemplate") or {}
    name = (obj.get("metadata") or {}).get("name")
    return {"kind": kind, "metadata": obj.get("metadata") or {},
            "spec": {"replicas": spec.get("replicas", 1), "template": copy.deepcopy(template),
                     "selector": {"matchLabels": {LWS_NAME: name, LWS_INDEX: "0"}}, "groupSize": lwt.get("size", 1),
                     "workerTemplate": lwt.get("workerTemplate") if lwt.get("leaderTemplate") else None}}


def claim_volumes(obj: dict[str, Any], pod: str | None) -> tuple[list[dict[str, Any]], str]:
    """A StatefulSet's volumeClaimTemplates as the volumes its pod mounts (claim <template>-<pod>),
    for the sister to mount the same claims; and how the pod was chosen (none running: ordinal 0)."""
    claims = [t for t in (obj.get("spec") or {}).get("volumeClaimTemplates") or [] if isinstance(t, dict)]
    if not claims:
        return [], ""
    name = str((obj.get("metadata") or {}).get("name"))
    owner = pod or f"{name}-0"
    return ([{"name": (t.get("metadata") or {}).get("name"),
              "persistentVolumeClaim": {"claimName": f"{(t.get('metadata') or {}).get('name')}-{owner}"}}
             for t in claims],
            f"the claims of pod {owner}" + ("" if pod else " (no production pod read: ordinal 0 assumed)"))
