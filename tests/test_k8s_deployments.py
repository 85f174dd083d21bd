"""Real deployments (issue 29) on the emulated cluster (../shared/kube): a namespace-scoped user, a
server that wants an API key, a sister that never gets past a phase, a hardened securityContext.
Each toy's pods bind 127.0.0.1:PORT_BASE + len(pod name), so each toy name has a length no other test's has."""

from __future__ import annotations

import base64
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from kernelscope.cli import main
from test_k8s import NS, apply, capture, deploy, kubectl, wait_gone
from test_k8s import cluster as cluster  # the session's cluster fixture, by name
from toyk8s import AUTH_SERVER, HERE, toy

SECRET_KEY = "sk-prod-key-never-printed"


@pytest.fixture
def namespaced(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """kubectl as a namespace-scoped user (tests/k8s/kubectl-namespaced.py), first on PATH."""
    real = shutil.which("kubectl")
    assert real
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "kubectl").symlink_to(HERE / "kubectl-namespaced.py")
    monkeypatch.setenv("KS_REAL_KUBECTL", real)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")


def findings(out: str) -> dict[str, str]:
    """`k8s inspect`'s lines `  [level] name: message`, by name."""
    found = {}
    for line in out.splitlines():
        if line.startswith("  [") and "] " in line:
            level, _, rest = line.strip()[1:].partition("] ")
            name, _, message = rest.partition(": ")
            found[name] = f"{level}: {message}"
    return found


def test_a_namespace_scoped_user_gets_three_answers_and_captures(cluster: None, namespaced: None, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """No `get nodes`, no cluster-scope pod list: those checks say they could not run and what would
    let them; nothing is reported ok that was not checked, and the capture goes on."""
    name = deploy(toy("namespaced-user", NS))
    assert main(["k8s", "inspect", "-n", NS, f"deploy/{name}"]) == 0
    found = findings(capsys.readouterr().out)
    assert found["gpu-capacity"].startswith("unchecked: could not check free GPUs for the sister (2 x nvidia.com/gpu): "
                                            "(Forbidden): nodes is forbidden")
    assert found["dcgm-exporter"].startswith("unchecked: could not check whether a DCGM exporter holds the node's "
                                             "profiling counters: (Forbidden): pods is forbidden")
    assert found["cuda-driver-skew"].startswith("unchecked: could not check node fake-node's driver CUDA against the "
                                                "application's (12.8)")
    assert found["limit-range"].startswith("unchecked: could not check LimitRanges in serving: (Forbidden)")
    assert "ok" not in (found["gpu-capacity"][:2], found["dcgm-exporter"][:2])
    # the three answers: one `kubectl create` of access reviews, each verb the capture needs allowed
    assert found["rbac"] == "ok: every verb the capture needs is allowed"
    assert found["rbac-checks"].endswith(": get nodes (the node driver's CUDA, free GPUs); list pods at cluster scope "
                                         "(free GPUs (other namespaces' pods), a DCGM exporter on the node); list "
                                         "limitranges (per-container limits)")
    code = main([*capture(name, "--kernel", "regex:nvjet", "--out", str(tmp_path / "ns"))])
    assert code == 0, capsys.readouterr().err
    assert json.loads((tmp_path / "ns" / "manifest.json").read_text())["captures"][0]["profiled"]
    assert wait_gone() == ""


def keyed(name: str, key_in_env: bool) -> dict[str, Any]:
    """A server that answers 401 without vLLM's API key; the key in a Secret, given to the server as
    production-stack does (env VLLM_API_KEY from a secretKeyRef), or only as a file (not found)."""
    apply({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "vllm-api-key", "namespace": NS},
           "data": {"key": base64.b64encode(SECRET_KEY.encode()).decode()}})
    doc = toy(name, NS, command=AUTH_SERVER, env={"FAKE_NCU_NEEDS_TRAFFIC": "1"})  # a report only once served
    server = doc["spec"]["template"]["spec"]["containers"][1]
    if key_in_env:
        server["env"].append({"name": "VLLM_API_KEY",
                              "valueFrom": {"secretKeyRef": {"name": "vllm-api-key", "key": "key"}}})
    else:  # the key where kernelscope cannot see it: the server reads it, its requests cannot carry it
        server["command"] = ["sh", "-c", "export VLLM_API_KEY=$(cat /keys/key); " + AUTH_SERVER[2]]
        server["volumeMounts"].append({"name": "keys", "mountPath": "/keys"})
        doc["spec"]["template"]["spec"]["volumes"].append({"name": "keys", "secret": {"secretName": "vllm-api-key"}})
    return doc


def test_an_authenticated_server_is_warmed_up_with_its_key_by_reference(cluster: None, tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    name = deploy(keyed("api-key-required", key_in_env=True))
    out = tmp_path / "auth"
    code = main([*capture(name, "--kernel", "regex:nvjet", "--out", str(out), "--warmup-path", "/v1/completions")])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    warm = json.loads((out / "warmup.json").read_text())
    ok = [r for r in warm if r["status"] == 200]  # a first one may find the server not yet listening (no status)
    assert len(ok) >= 2 and "kernelscope" in ok[0]["reply"] and not {401, 403} & {r["status"] for r in warm}
    values = json.loads((out / "sister-values.json").read_text())
    tools = next(c for c in values["spec"]["containers"] if c["name"] == "kernelscope-tools")
    assert tools["env"] == [{"name": "KERNELSCOPE_API_KEY",  # a reference: the value never leaves the cluster
                             "valueFrom": {"secretKeyRef": {"name": "vllm-api-key", "key": "key"}}}]
    assert "env VLLM_API_KEY from secret vllm-api-key key key" in captured.out
    for f in [*out.rglob("*")]:
        assert f.is_dir() or SECRET_KEY.encode() not in f.read_bytes(), f
    assert SECRET_KEY not in captured.out + captured.err and wait_gone() == ""


def test_a_key_kernelscope_cannot_find_stops_at_warm_up_with_the_status(cluster: None, tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Every request refused: said within seconds as the warm-up phase with its HTTP status, not
    "ncu profiled no kernel" after the timeout."""
    name = deploy(keyed("api-key-not-found", key_in_env=False))
    code = main([*capture(name, "--kernel", "regex:nvjet", "--out", str(tmp_path / "k"), "--warmup-path",
                          "/v1/completions")])
    err = capsys.readouterr().err
    assert code == 2 and "warm-up refused: 3 requests answered HTTP 401" in err and "no API key found" in err
    assert "profiled no kernel" not in err and not (tmp_path / "k").exists() and wait_gone() == ""


def test_a_timeout_names_the_phase_the_sister_was_stuck_in(cluster: None, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """The sister's copy of an init container that never ends (production's ends: it is told apart
    by its pod name): the timeout says init containers, naming it."""
    doc = toy("stuck-in-init-cont", NS)
    init = doc["spec"]["template"]["spec"]["initContainers"][0]
    init["env"] = [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]
    init["command"] = ["sh", "-c", 'case "$POD_NAME" in ks-*) sleep 3600;; esac; ' + init["command"][2]]
    name = deploy(doc)
    code = main(capture(name, "--kernel", "regex:nvjet", "--out", str(tmp_path / "i"), "--timeout", "12"))
    err = capsys.readouterr().err
    assert code == 2 and "stuck at init containers: install-fake-ncu is running" in err, err
    assert "profiled no kernel" not in err and wait_gone() == ""


def test_a_statefulset_is_captured_with_its_claims(cluster: None, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A StatefulSet whose model cache is a volumeClaimTemplate: the sister mounts production pod's
    own claim (model-cache-<pod>), which this API server cannot describe (no PVCs): said, not ok."""
    doc = toy("model-sts", NS)  # its pod, model-sts-0, binds PORT_BASE + 11
    doc["kind"] = "StatefulSet"
    doc["spec"]["serviceName"] = "model-sts"
    doc["spec"]["volumeClaimTemplates"] = [{"metadata": {"name": "model-cache"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "100Gi"}}}}]
    doc["spec"]["template"]["spec"]["containers"][1]["volumeMounts"].append(
        {"name": "model-cache", "mountPath": "/models"})
    apply(doc)
    deadline = time.monotonic() + 60
    while "torch" not in kubectl("-n", NS, "logs", "pod/model-sts-0", "-c", "server", check=False):
        assert time.monotonic() < deadline, "no launch log"
        time.sleep(0.3)
    assert main(["k8s", "inspect", "-n", NS, "sts/model-sts"]) == 0
    found = findings(capsys.readouterr().out)
    assert found["workload"] == ("info: statefulset/model-sts: the sister copies its pod template and mounts the "
                                 "claims of pod model-sts-0 (volumeClaimTemplates)")
    assert found["model-volume"].startswith("unchecked: could not check PVC model-cache-model-sts-0's access mode")
    argv = capture("model-sts", "--kernel", "regex:nvjet", "--out", str(tmp_path / "sts"))
    code = main([*argv[:4], "statefulset/model-sts", *argv[5:]])
    assert code == 0, capsys.readouterr().err
    values = json.loads((tmp_path / "sts" / "sister-values.json").read_text())
    assert {"name": "model-cache", "persistentVolumeClaim": {"claimName": "model-cache-model-sts-0"}} in \
        values["spec"]["volumes"]
    m = json.loads((tmp_path / "sts" / "manifest.json").read_text())
    assert m["captures"][0]["profiled"] and wait_gone() == ""
    kubectl("-n", NS, "delete", "statefulset", "model-sts", "--wait=false")
