"""The live-pod flow end to end on a GPU machine, through ../shared/kube's GPU-host mode: a
Deployment whose pod serves with two CUDA worker processes (like TP=2) behind an OpenAI-style
endpoint; `k8s inspect`; `k8s capture` of two kernels with the wrap strategy and warm-up requests
sent to the sister; the bundle analysed; nothing of kernelscope left; production untouched (same
pod, no restart, same generation); and the sister's step time while wrapped, during the capture,
and after it, from the warm-up replies. Prints one JSON document.

    export KUBE_HOST_MOUNTS="/usr /opt /etc /dev /proc /sys $PWD"; eval "$(.gpukube/gpu-up)"
    PYTHONPATH=src python3 bench/device/k8s_gpu_e2e.py OUTDIR
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Any

NS = "serving"
REPO = Path(__file__).resolve().parents[2]
PY = sys.executable
NCU = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
BASE_PORT = 8100
KS = [PY, "-m", "kernelscope.cli"]


def kubectl(*args: str, check: bool = True, stdin: str | None = None) -> str:
    return subprocess.run(["kubectl", *args], capture_output=True, text=True, check=check, input=stdin).stdout


def port(pod: str) -> int:
    return BASE_PORT + zlib.crc32(pod.encode()) % 500


def deployment() -> dict[str, Any]:
    server = {
        "name": "server", "image": "vllm/vllm-openai:v0.11.0",
        "command": [PY, str(REPO / "bench/workloads/tp_server.py")],
        "args": ["--tensor-parallel-size", "2", "--port", str(BASE_PORT), "--port-offset-env", "POD_NAME"],
        "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}},
                {"name": "PYTHONUNBUFFERED", "value": "1"}],
        "resources": {"limits": {"nvidia.com/gpu": "1"}},
        "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}],
    }
    agent = {"name": "metrics-agent", "image": "busybox", "command": ["sleep", "3600"]}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "tpserve", "namespace": NS},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "tpserve"}},
                     "template": {"metadata": {"labels": {"app": "tpserve"}},
                                  "spec": {"containers": [agent, server],
                                           "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory"}}]}}}}


def production_state(pod: dict[str, Any]) -> dict[str, Any]:
    """What must not change: the same pod, no restart, the Deployment's generation."""
    return {"pod": pod["metadata"]["name"], "uid": pod["metadata"]["uid"],
            "restarts": [c.get("restartCount", 0) for c in pod["status"].get("containerStatuses", [])],
            "generation": json.loads(kubectl("-n", NS, "get", "deploy", "tpserve", "-o", "json"))["metadata"]
            ["generation"]}


def prod_pod() -> dict[str, Any]:
    pods = json.loads(kubectl("-n", NS, "get", "pods", "-l", "app=tpserve", "-o", "json"))["items"]
    return pods[0]


def ready(pod: str, timeout: float = 180) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if '"event": "serving"' in kubectl("-n", NS, "logs", pod, "-c", "server", check=False):
            return time.monotonic() - t0
        time.sleep(1)
    raise SystemExit(f"{pod} never served:\n" + kubectl("-n", NS, "logs", pod, "-c", "server", check=False)[-3000:])


def requests(p: int, n: int) -> list[dict[str, Any]]:
    import urllib.request

    out = []
    for _ in range(n):
        req = urllib.request.Request(f"http://127.0.0.1:{p}/v1/completions", data=b'{"max_tokens": 64}',
                                     headers={"Content-Type": "application/json"})
        out.append(json.loads(urllib.request.urlopen(req, timeout=60).read()))
    return out


def per_step(replies: list[dict[str, Any]]) -> float | None:
    values = [v for r in replies for v in (r.get("us_per_step") or {}).values()]
    return round(statistics.median(values), 1) if values else None


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/k8s-e2e")
    out.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"ncu": NCU}
    kubectl("create", "namespace", NS, check=False)
    kubectl("-n", NS, "create", "secret", "generic", "hf", "--from-literal=token=hf_e2e_secret_value", check=False)
    kubectl("apply", "-f", "-", stdin=json.dumps(deployment()))
    kubectl("-n", NS, "rollout", "status", "deploy/tpserve", "--timeout=120s")
    pod = prod_pod()
    name = pod["metadata"]["name"]
    result["production_ready_s"] = round(ready(name), 1)
    before = production_state(pod)
    result["production_alone_us_per_step"] = per_step(requests(port(name), 20)[5:])
    ins = subprocess.run([*KS, "k8s", "inspect", "-n", NS, "deploy/tpserve", "--tools-image", "host"],
                         capture_output=True, text=True)
    (out / "inspect.txt").write_text(ins.stdout + ins.stderr)
    result["inspect_exit"] = ins.returncode
    release = "ks-e2e"
    bundle = out / "bundle"
    t0 = time.monotonic()
    cap = subprocess.run([*KS, "k8s", "capture", "-n", NS, "deploy/tpserve", "--kernel", "regex:nvjet",
                          "--kernel", "regex:norm", "--launch-skip", "200", "--launch-count", "2",
                          "--ncu-in-image", NCU, "--tools-image", "host", "--release", release,
                          "--warmup-requests", "40", "--warmup-port", str(port(release)), "--timeout", "300",
                          "--context", "model=tp_server (2 workers)", "--out", str(bundle)],
                         capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})
    result["capture_s"] = round(time.monotonic() - t0, 1)
    result["capture_exit"] = cap.returncode
    (out / "capture.txt").write_text(cap.stdout + cap.stderr)
    if bundle.exists():
        manifest = json.loads((bundle / "manifest.json").read_text())
        result["profiled"] = [c["profiled"] for c in manifest["captures"]]
        result["gpu"] = manifest["gpu"]
        result["passes"] = [c["passes"] for c in manifest["captures"]]
        replies = json.loads((bundle / "warmup.json").read_text()) if (bundle / "warmup.json").exists() else []
        parsed = [(r, json.loads(r["reply"])) for r in replies if r["reply"].strip().startswith("{")]
        wrapped = [p for r, p in parsed if r["report_bytes"] == 0]
        done = [p for r, p in parsed if r["report_bytes"] > 0]
        result["sister_us_per_step"] = {
            "wrapped, before and during the capture (median)": per_step(wrapped),
            "slowest request while wrapped, ms": max((p["ms"] for p in wrapped), default=None),
            "after the report was written (median)": per_step(done),
            "requests": len(parsed)}
        an = subprocess.run([*KS, "analyze", str(bundle), "--format", "json"], capture_output=True, text=True)
        result["analyze_exit"] = an.returncode
        if an.returncode == 0:
            doc = json.loads(an.stdout)
            result["kernels"] = [{"name": k["name"], "bound": k["bound"], "duration_ns": k["duration_ns"],
                                  "source": Path(k["source"]).name} for k in doc["kernels"]]
    left = kubectl("-n", NS, "get", "pods", "-l", "kernelscope.dev/owner=kernelscope", "-o", "name")
    releases = subprocess.run(["helm", "-n", NS, "list", "-q", "--deployed", "--failed", "--pending", "--uninstalling"],
                              capture_output=True, text=True).stdout
    after = production_state(prod_pod())
    result["left_behind"] = {"pods": left.split(), "releases": releases.split()}
    result["production_untouched"] = before == after
    result["production"] = {"before": before, "after": after}
    (out / "result.json").write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
