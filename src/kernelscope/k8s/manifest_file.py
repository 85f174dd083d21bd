"""A deployment read from a file instead of the cluster, so that `k8s capture --dry-run
--from-manifest FILE` plans a capture with no cluster at all: the file `kubectl apply -f`
takes (documents separated by `---`), or what `kubectl get deploy NAME -o yaml|json` prints (one
Deployment, or a `kind: List` of them). Only the named Deployment is used; the file's other
objects (Secrets with their values among them) are never read further."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import InputError
from ..files import parse_yaml_documents, read_text
from .kubectl import check_name

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


def _check_shape(dep: dict[str, Any], path: Path, name: str) -> None:
    """What inspect and the sister read, present and of the right type, so that a hand-written or
    cut-down manifest fails here with its path, never deeper with a KeyError."""
    where = f"deployment {name}"
    spec = dep.get("spec")
    template = spec.get("template") if isinstance(spec, dict) else None
    pod = template.get("spec") if isinstance(template, dict) else None
    containers = pod.get("containers") if isinstance(pod, dict) else None
    if not isinstance(containers, list) or not containers:
        raise InputError(path, f"{where} has no spec.template.spec.containers")
    replicas = spec.get("replicas", 1) if isinstance(spec, dict) else 1
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        raise InputError(path, f"{where}: spec.replicas {replicas!r:.40} is not a count")
    for c in containers:
        if not isinstance(c, dict) or not isinstance(c.get("name"), str):
            raise InputError(path, f"{where}: a container without a name")
        for key in ("command", "args", "env", "volumeMounts", "ports"):
            if not isinstance(c.get(key, []), list):
                raise InputError(path, f"{where}: container {c['name']!r:.60} {key} is not a list")


def load(path: Path, name: str, namespace: str) -> dict[str, Any]:
    """The Deployment NAME in the file, checked against the namespace the plan is for."""
    objects = _objects(parse_yaml_documents(read_text(path, LIMIT, "manifest"), path, "manifest"), path)
    found = [o for o in objects if o.get("kind") == "Deployment" and _name(o) == name]
    in_ns = [o for o in found if (o.get("metadata") or {}).get("namespace") in (None, namespace)]
    if not found:
        held = ", ".join(f"{o.get('kind', '?')}/{_name(o)}" for o in objects[:8]) or "nothing"
        more = f" and {len(objects) - 8} more" if len(objects) > 8 else ""
        raise InputError(path, f"no Deployment named {name} (the file holds {held}{more})")
    if not in_ns:
        other = check_name("namespace", found[0]["metadata"]["namespace"])
        raise InputError(path, f"deployment {name} is in namespace {other}, not {namespace}: pass -n {other}")
    dep = in_ns[0]
    _check_shape(dep, path, name)
    return dep
