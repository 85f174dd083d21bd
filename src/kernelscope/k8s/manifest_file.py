"""A workload read from a file instead of the cluster, so that `k8s capture --dry-run
--from-manifest FILE` plans a capture with no cluster at all: the file `kubectl apply -f`
takes (documents separated by `---`), what `kubectl get KIND NAME -o yaml|json` prints (one
object, or a `kind: List` of them), or what `helm template` renders. Only the named object is used
(a Deployment, StatefulSet or LeaderWorkerSet; for a KServe service, the Deployment carrying its
labels); the file's other objects (Secrets with their values among them) are never read further."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import InputError, KubeError
from ..files import parse_yaml_documents, read_text
from .kubectl import check_name
from .workload import Target, kserve_deployment, normal

LIMIT = 16 << 20  # `kubectl get deploy -A -o yaml` of a large cluster is a few MB


def _objects(docs: list[Any], path: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for doc in docs:
        if doc is None:  # an empty document (a trailing `---`)
            continue
        if not isinstance(doc, dict):
            raise InputError(path, f"a document is a {type(doc).__name__}, not a Kubernetes object")
        items = doc.get("items") if doc.get("kind") == "List" else [doc]
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise InputError(path, "a kind: List whose items are not Kubernetes objects")
        out += items
    return out


def _name(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata")
    return str(meta.get("name")) if isinstance(meta, dict) else "?"


# The fields inspect and the sister read, with the type the Kubernetes API gives each: a mapping
# (dict), a list of one shape ([shape]), a string. A hand-written or cut-down manifest that breaks
# one fails here with its path and field, never deeper with a KeyError or an AttributeError; the
# fields not listed are copied into the sister as they are, and the API server judges them there.
Shape = type | dict[str, "Shape"] | list["Shape"]
_CONTAINER: dict[str, Shape] = {
    "name": str, "image": str, "command": [str], "args": [str], "workingDir": str,
    "env": [{"name": str, "value": str, "valueFrom": dict}], "envFrom": [dict], "ports": [dict],
    "volumeMounts": [dict], "resources": {"limits": dict, "requests": dict}, "securityContext": dict,
    "livenessProbe": dict, "readinessProbe": dict, "startupProbe": dict,
}
_DEPLOYMENT: dict[str, Shape] = {
    "metadata": {"name": str, "namespace": str, "labels": dict, "annotations": dict},
    "spec": {"selector": {"matchLabels": dict}, "template": {
        "metadata": {"labels": dict, "annotations": dict},
        "spec": {"containers": [_CONTAINER], "initContainers": [_CONTAINER], "volumes": [dict],
                 "tolerations": [dict], "nodeSelector": dict, "imagePullSecrets": [dict],
                 "securityContext": dict, "affinity": dict, "serviceAccountName": str}}},
}
_WORDS = {dict: "a mapping", list: "a list", str: "a string", bool: "true/false", int: "a number", float: "a number"}


def _without_nulls(value: Any) -> Any:
    """A null field is an absent one, as `kubectl apply` reads it (`metadata:` with nothing under it)."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    return [_without_nulls(v) for v in value] if isinstance(value, list) else value


def _conform(value: Any, shape: Shape, where: str, path: Path, name: str) -> None:
    kind = dict if isinstance(shape, dict) else list if isinstance(shape, list) else shape
    if not isinstance(value, kind):
        got = _WORDS.get(type(value), type(value).__name__)
        raise InputError(path, f"deployment {name}: {where.lstrip('.') or 'the object'} is {got}, not {_WORDS[kind]}"
                               f" ({str(value)!r:.40})")
    if isinstance(shape, dict) and isinstance(value, dict):
        for key, inner in shape.items():
            if key in value:
                _conform(value[key], inner, f"{where}.{key}", path, name)
    elif isinstance(shape, list) and isinstance(value, list):
        for i, item in enumerate(value):
            _conform(item, shape[0], f"{where}[{i}]", path, name)


def _check_shape(dep: dict[str, Any], path: Path, name: str) -> None:
    """The deployment's fields of _DEPLOYMENT of their types, its containers named, its replicas a count."""
    where = f"deployment {name}"
    _conform(dep, _DEPLOYMENT, "", path, name)
    containers = (((dep.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers")
    if not containers:
        raise InputError(path, f"{where} has no spec.template.spec.containers")
    replicas = dep["spec"].get("replicas", 1)
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        raise InputError(path, f"{where}: spec.replicas {replicas!r:.40} is not a count")
    for kind in ("containers", "initContainers"):
        for i, c in enumerate(dep["spec"]["template"]["spec"].get(kind, [])):
            if "name" not in c:
                raise InputError(path, f"{where}: spec.template.spec.{kind}[{i}] has no name")


def _labelled(obj: dict[str, Any], labels: dict[str, str]) -> bool:
    held = (obj.get("metadata") or {}).get("labels")
    return isinstance(held, dict) and all(held.get(k) == v for k, v in labels.items())


def load(path: Path, target: Target, namespace: str) -> dict[str, Any]:
    """The target's object in the file, in the Deployment's shape (workload.normal), checked against
    the namespace the plan is for."""
    objects = _objects(parse_yaml_documents(read_text(path, LIMIT, "manifest"), path, "manifest"), path)
    kind = "Deployment" if target.kserve else target.kind
    found = [o for o in objects if o.get("kind") == kind and (
        _labelled(o, target.labels()) if target.kserve else _name(o) == target.name)]
    in_ns = [o for o in found if (o.get("metadata") or {}).get("namespace") in (None, namespace)]
    if not found:
        held = ", ".join(f"{o.get('kind', '?')}/{_name(o)}" for o in objects[:8]) or "nothing"
        more = f" and {len(objects) - 8} more" if len(objects) > 8 else ""
        what = f"Deployment labelled for {target.ref()}" if target.kserve else f"{kind} named {target.name}"
        raise InputError(path, f"no {what} (the file holds {held}{more})")
    if not in_ns:
        other = check_name("namespace", found[0]["metadata"]["namespace"])
        raise InputError(path, f"{kind.lower()} {_name(found[0])} is in namespace {other}, not {namespace}: "
                               f"pass -n {other}")
    try:
        chosen = kserve_deployment(target, in_ns) if target.kserve else in_ns[0]
    except KubeError as exc:
        raise InputError(path, str(exc)) from exc
    dep: dict[str, Any] = normal(_without_nulls(chosen), kind)
    _check_shape(dep, path, _name(dep))
    return dep
