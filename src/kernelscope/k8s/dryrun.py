"""What a dry run prints: each sister Pod it would apply (as YAML, secrets by name and never by
value), every kubectl/helm argv in order, and for `k8s cleanup --dry-run` what it would remove and
the labels that make it ours. Nothing here says a change happened: a dry run makes none."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .findings import GPU, gpu_request, named
from .kubectl import Step
from .sister import CAPTURE_LABEL, EXPIRES_LABEL, INSTALL, REPORTS, SISTER_OF_LABEL, TOOLS, expires_at
from .workload import RESOURCE

if TYPE_CHECKING:
    from .capture import Cleanup, K8sCaptureResult
    from .findings import Inspection


def secret_names(spec: dict[str, Any]) -> list[str]:
    """The Secrets a pod spec refers to, each with where: a reference carries the name only."""
    out = []
    for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        for e in c.get("env") or []:
            key = (e.get("valueFrom") or {}).get("secretKeyRef") or {}
            if key.get("name"):
                out.append(f"{key['name']} (env {e.get('name')} of {c.get('name')})")
        out += [f"{e['secretRef']['name']} (envFrom of {c.get('name')})" for e in c.get("envFrom") or []
                if (e.get("secretRef") or {}).get("name")]
    for v in spec.get("volumes") or []:
        sources = [v, *((v.get("projected") or {}).get("sources") or [])]
        out += [f"{s['secret'].get('secretName') or s['secret'].get('name')} (volume {v.get('name')})"
                for s in sources if isinstance(s.get("secret"), dict)]
    out += [f"{s['name']} (imagePullSecrets)" for s in spec.get("imagePullSecrets") or [] if s.get("name")]
    return out


def _yaml(doc: dict[str, Any]) -> list[str]:
    import yaml

    return yaml.safe_dump(doc, sort_keys=False, width=1 << 16).splitlines()


def sister_lines(pod: dict[str, Any], ins: Inspection) -> list[str]:
    """A summary of one sister Pod, then the Pod itself as one YAML document (`---` to `...`)."""
    meta, spec = pod["metadata"], pod["spec"]
    gpu, tools = named(spec, ins.container), named(spec, TOOLS)
    install = next((c for c in spec.get("initContainers") or [] if c.get("name") == INSTALL), None)
    ncu = gpu["command"][0]
    source = f"copied in by init container {INSTALL} (image {install['image']})" if install else "in the image"
    return [
        f"sister pod {meta['name']}: 1 replica (one bare Pod, restartPolicy {spec['restartPolicy']}, "
        f"activeDeadlineSeconds {spec['activeDeadlineSeconds']} s); {RESOURCE[ins.kind]}/{ins.deployment} keeps its "
        f"{ins.replicas} replica(s), untouched",
        f"  GPU container {ins.container}: image {gpu.get('image')}, {gpu_request(gpu)} x {GPU}, its server run "
        f"under {ncu} (the whole command is in the spec below)",
        f"  ncu: {ncu}, {source}; sidecar {TOOLS} (image {tools.get('image')}) shares {REPORTS}",
        "  labels: " + ", ".join(f"{k}={v}" for k, v in meta["labels"].items()),
        "  secrets, by name only: " + (", ".join(secret_names(spec)) or "none"),
        f"--- # sister pod {meta['name']}, as helm would apply it (secret values redacted)",
        *_yaml(pod),
        "...",
    ]


def step_lines(steps: list[Step]) -> list[str]:
    tag = {True: "[change]", False: "[read]  "}
    return [f"{i:3d}. {tag[s.mutates]} {s.line()}{'  (ran)' if s.exit_code is not None else ''}"
            for i, s in enumerate(steps, 1)]


def capture_plan(result: K8sCaptureResult, source: Path | None) -> list[str]:
    where = f"planned from {source}, no cluster read" if source else "planned against the cluster, only its reads ran"
    lines = [f"dry run ({where}): nothing is installed, started, copied or removed"]
    for pod in result.sisters:
        lines += sister_lines(pod, result.inspection)
    ran = "none was run: no cluster" if source else "those marked (ran) were run, no [change] step"
    return [*lines, f"kubectl/helm steps, in order ({ran}; while a sister runs, a capture also polls it: get pod, "
                    "logs, exec for the warm-up requests and the report's size):", *step_lines(result.steps)]


def _expiry(labels: dict[str, str], now: float) -> str:
    at = expires_at(labels)
    if at is None:
        raw = labels.get(EXPIRES_LABEL)
        return "no expiry label" if raw is None else f"expiry label {raw!r:.40} is not unix seconds: expiry unknown"
    left = at - int(now)
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))
    return f"expires {when} ({f'in {left} s' if left > 0 else f'{-left} s ago'})"


def cleanup_lines(result: Cleanup) -> list[str]:
    if not result.dry_run:
        return [f"removed: {', '.join(r.name for r in result.removed) or 'nothing of kernelscope left'}"]
    lines = [f"dry run: would remove {len(result.removed)} object(s) from {result.namespace}; nothing was removed"]
    for r in result.removed:
        lb = r.labels
        what = (f"capture {lb.get(CAPTURE_LABEL, '?')}, sister of deployment/{lb.get(SISTER_OF_LABEL, '?')}, "
                f"{_expiry(lb, result.now)}; labels " + ",".join(f"{k}={v}" for k, v in lb.items())) if lb else \
            "its release record only (no pod left)"
        lines.append(f"  {r.name}: {what}")
    return [*lines, "kubectl/helm steps, in order (those marked (ran) were run, no [change] step):",
            *step_lines(result.steps)]
