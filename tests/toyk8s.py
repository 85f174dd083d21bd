"""Deployments for the emulated cluster (../shared/kube): a toy server whose GPU container is the
second one and whose image "ships" a stand-in ncu (fake-ncu.sh: a real H200 report, see there), so
the pod transport's kubectl/helm steps run for real without a GPU."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent / "k8s"
REPORT = Path(__file__).parent / "fixtures" / "decode_gemm.ncu-rep"
FAKE_NCU = "/fakencu-bin/ncu"
# Pods of the emulated cluster share 127.0.0.1: each binds PORT_BASE + len(its name), so within a cluster the
# toys' names have lengths no other test's have, and each xdist worker's cluster has its own hundred ports
PORT_BASE = 8000 + 100 * int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
PORT = f"$(({PORT_BASE} + ${{#POD_NAME}}))"  # a pod's port, as its shell works it out
SERVE = f"exec httpd -f -p {PORT} -h /www"  # a pod's server, on its port


def fake_ncu_configmap(ns: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fakencu", "namespace": ns},
            "data": {"ncu": (HERE / "fake-ncu.sh").read_text(),
                     "ncu-options.sh": (HERE / "ncu-options.sh").read_text(),
                     "auth-server.sh": (HERE / "auth-server.sh").read_text(),
                     "report.b64": base64.b64encode(REPORT.read_bytes()).decode()}}


def toy(name: str, ns: str, command: list[str] | None = None, args: list[str] | None = None,
        env: dict[str, str] | None = None, init_fails: bool = False) -> dict[str, Any]:
    """A server on port PORT_BASE + len(pod name)."""
    server: dict[str, Any] = {
        "name": "server", "image": "vllm/vllm-openai:v0.11.0",
        "command": command if command is not None else
        ["sh", "-c", f"echo 'INFO torch 2.9.0+cu128'; {SERVE}"],
        "args": args or ["--tensor-parallel-size", "2"],
        "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                *({"name": k, "value": v} for k, v in (env or {}).items())],
        "resources": {"limits": {"nvidia.com/gpu": "2"}},
        "volumeMounts": [{"name": "fakebin", "mountPath": "/fakencu-bin"}, {"name": "shm", "mountPath": "/dev/shm"}],
    }
    install = ("cp /fakencu/ncu /fakencu/ncu-options.sh /fakencu/report.b64 /fakencu/auth-server.sh /fakencu-bin/ && "
               "chmod 755 /fakencu-bin/ncu /fakencu-bin/auth-server.sh && mkdir -p /www")
    init = {"name": "install-fake-ncu", "image": "busybox",
            "command": ["sh", "-c", "exit 1" if init_fails else install],
            "volumeMounts": [{"name": "fakencu", "mountPath": "/fakencu"},
                             {"name": "fakebin", "mountPath": "/fakencu-bin"}]}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"initContainers": [init],
                                           "containers": [{"name": "agent", "image": "busybox",
                                                           "command": ["sleep", "3600"]}, server],
                                           "volumes": [{"name": "fakencu", "configMap": {"name": "fakencu"}},
                                                       {"name": "fakebin", "emptyDir": {}},
                                                       {"name": "shm", "emptyDir": {"medium": "Memory"}}]}}}}


# a server that wants vLLM's API key (tests/k8s/auth-server.sh answers 401 without it)
AUTH_SERVER = ["sh", "-c", f"echo 'INFO torch 2.9.0+cu128'; exec nc -ll -p {PORT} -e /fakencu-bin/auth-server.sh"]


def port(pod: str) -> int:
    return PORT_BASE + len(pod)


def planned_pods(out: str) -> list[dict[str, Any]]:
    """The sister Pods a `k8s capture --dry-run` printed: each one YAML document, `--- # sister pod` to `...`."""
    import re

    import yaml

    return [yaml.safe_load(b) for b in re.findall(r"^--- # sister pod .*?^\.\.\.$", out, re.M | re.S)]
