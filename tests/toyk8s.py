"""Deployments for the emulated cluster (../shared/kube): a toy server whose GPU container is the
second one and whose image "ships" a stand-in ncu (fake-ncu.sh: a real H200 report, see there), so
the pod transport's kubectl/helm steps run for real without a GPU."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent / "k8s"
REPORT = Path(__file__).parent / "fixtures" / "decode_gemm.ncu-rep"
FAKE_NCU = "/fakencu-bin/ncu"


def fake_ncu_configmap(ns: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fakencu", "namespace": ns},
            "data": {"ncu": (HERE / "fake-ncu.sh").read_text(),
                     "ncu-options.sh": (HERE / "ncu-options.sh").read_text(),
                     "auth-server.sh": (HERE / "auth-server.sh").read_text(),
                     "report.b64": base64.b64encode(REPORT.read_bytes()).decode()}}


def toy(name: str, ns: str, command: list[str] | None = None, args: list[str] | None = None,
        env: dict[str, str] | None = None, init_fails: bool = False) -> dict[str, Any]:
    """A server on port 8000 + len(pod name) (pods of the emulated cluster share 127.0.0.1)."""
    server: dict[str, Any] = {
        "name": "server", "image": "vllm/vllm-openai:v0.11.0",
        "command": command if command is not None else
        ["sh", "-c", "echo 'INFO torch 2.9.0+cu128'; exec httpd -f -p $((8000 + ${#POD_NAME})) -h /www"],
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
AUTH_SERVER = ["sh", "-c", "echo 'INFO torch 2.9.0+cu128'; exec nc -ll -p $((8000 + ${#POD_NAME})) "
               "-e /fakencu-bin/auth-server.sh"]


def port(pod: str) -> int:
    return 8000 + len(pod)


def planned_pods(out: str) -> list[dict[str, Any]]:
    """The sister Pods a `k8s capture --dry-run` printed: each one YAML document, `--- # sister pod` to `...`."""
    import re

    import yaml

    return [yaml.safe_load(b) for b in re.findall(r"^--- # sister pod .*?^\.\.\.$", out, re.M | re.S)]
