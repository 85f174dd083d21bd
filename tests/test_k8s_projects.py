"""The manifests of the projects people deploy vLLM with (tests/fixtures/k8s/projects, rendered from
their charts or copied as published; the README there says from where): `k8s capture --dry-run
--from-manifest` plans each one with no cluster, or refuses it with the reason, and reads the
serving command in every form these projects write it."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from hostile import LAST_ERROR, cli
from kernelscope.cli import main
from toyk8s import planned_pods

PROJECTS = Path(__file__).parent / "fixtures" / "k8s" / "projects"


@pytest.fixture(autouse=True)
def no_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No kubeconfig, no kubectl or helm: a step that ran would fail the command."""
    (tmp_path / "empty-bin").mkdir()
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-such-kubeconfig"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))


def argv(manifest: Path, target: str, ns: str, *extra: str) -> list[str]:
    return ["k8s", "capture", "-n", ns, target, "--kernel", "regex:nvjet", "--out", "/nonexistent/never-written",
            "--dry-run", "--from-manifest", str(manifest), "--release", "ks-p", *extra]


def plan(capsys: pytest.CaptureFixture[str], name: str, target: str, ns: str = "serving",
         *extra: str) -> tuple[str, dict[str, Any]]:
    assert main(argv(PROJECTS / name, target, ns, *extra)) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    (pod,) = planned_pods(out)
    return out, pod


def refused(name: str | Path, target: str, ns: str = "serving") -> str:
    assert cli(argv(PROJECTS / name, target, ns)) == "clean"
    return LAST_ERROR[0]


def gpu_of(pod: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in pod["spec"]["containers"] if c["name"] == name)


def test_vllms_guide_sh_c_form(capsys: pytest.CaptureFixture[str]) -> None:
    """`command: ["/bin/sh", "-c"]`, the server in args; the image tag `latest` names no release."""
    out, pod = plan(capsys, "vllm-k8s-guide-nvidia.yaml", "deploy/mistral-7b", "default")
    cmd = gpu_of(pod, "mistral-7b")["command"]
    assert cmd[-3:-1] == ["/bin/sh", "-c"] and "vllm serve mistralai/Mistral-7B-Instruct-v0.3" in cmd[-1]
    assert cmd[-1].endswith(" --profiler-config.profiler cuda")  # inside the script, where the shell passes it on
    assert "[warn] vllm-version: the serving window: vLLM's version is unknown" in out


def test_vllms_guide_amd_and_cpu_are_refused_with_the_reason() -> None:
    amd = refused("vllm-k8s-guide-amd.yaml", "deploy/mistral-7b", "default")
    assert "requests amd.com/gpu: ncu profiles NVIDIA GPUs only" in amd and "hostNetwork" in amd
    assert "requests no nvidia.com/gpu" in refused("vllm-k8s-guide-cpu.yaml", "deploy/vllm-server", "serving")


def test_vllms_chart(capsys: pytest.CaptureFixture[str]) -> None:
    out, pod = plan(capsys, "vllm-chart-helm-default.yaml", "deploy/vllm-deployment-vllm")
    assert gpu_of(pod, "vllm")["resources"]["limits"]["nvidia.com/gpu"] in (1, "1")
    assert "1 GPU worker process(es)" in out


def test_production_stack_engine_not_router(capsys: pytest.CaptureFixture[str]) -> None:
    out, pod = plan(capsys, "production-stack-minimal.yaml", "deploy/vllm-opt125m-deployment-vllm")
    assert [c["name"] for c in pod["spec"]["containers"]] == ["vllm", "kernelscope-tools"]
    assert "vllm-deployment-router" not in yaml.safe_dump(pod)
    router = refused("production-stack-minimal.yaml", "deploy/vllm-deployment-router")
    assert "runs no model on a GPU (a router, a gateway, a sidecar)" in router


def test_production_stack_secure_setup_warms_up_with_the_key_by_reference(capsys: pytest.CaptureFixture[str]) -> None:
    out, pod = plan(capsys, "production-stack-secure-apikey.yaml", "deploy/vllm-opt125m-deployment-vllm")
    assert "api-key: the server wants an API key (env VLLM_API_KEY from secret vllm-secrets key vllmApiKey)" in out
    tools = gpu_of(pod, "kernelscope-tools")
    assert tools["env"] == [{"name": "KERNELSCOPE_API_KEY",
                             "valueFrom": {"secretKeyRef": {"name": "vllm-secrets", "key": "vllmApiKey"}}}]
    assert {"name": "KERNELSCOPE_API_KEY",  # the serving container too: warm-ups go from there when the tools
            "valueFrom": {"secretKeyRef": {"name": "vllm-secrets", "key": "vllmApiKey"}}  # image has no client
            } in gpu_of(pod, "vllm")["env"]
    assert "abc123XYZ987" not in out  # the example's key, in the file's Secret: never read, never printed


def test_production_stack_tp2_on_v0_8_5_has_no_cuda_profiler(capsys: pytest.CaptureFixture[str]) -> None:
    out, pod = plan(capsys, "production-stack-tp2.yaml", "deploy/vllm-qwen7b-deployment-vllm")
    cmd = gpu_of(pod, "vllm")["command"]
    assert cmd[cmd.index("--filter-mode") + 1] == "per-gpu" and "--profile-from-start" not in cmd
    assert "--profiler-config.profiler" not in cmd and "vLLM 0.8.5 (the image tag vllm/vllm-openai:v0.8.5) has no " \
                                                      "CUDA-profiler switch" in out
    assert "the window is the server's start, ncu --launch-skip counting from it" in out


def test_production_stack_pd_engines_pin_a_gpu_they_do_not_request() -> None:
    err = refused("production-stack-pd-disagg.yaml", "deploy/vllm-llama-decode-deployment-vllm")
    assert "pins CUDA_VISIBLE_DEVICES=1 with no nvidia.com/gpu request" in err


def test_llm_d_decode_keeps_its_routing_sidecar(capsys: pytest.CaptureFixture[str]) -> None:
    out, pod = plan(capsys, "llm-d-modelservice-pd.yaml", "deploy/pd-llm-d-modelservice-decode", "serving")
    inits = pod["spec"]["initContainers"]
    assert inits[0]["name"] == "routing-proxy" and inits[0]["restartPolicy"] == "Always"
    assert inits[-1]["name"] == "kernelscope-ncu-install"


@pytest.mark.parametrize(("name", "target"), [
    ("lws-vllm-gpu.yaml", "leaderworkerset/vllm"),
    ("llm-d-modelservice-multinode-lws.yaml", "lws/llm-d-modelservice-decode"),
])
def test_a_multi_node_leaderworkerset_is_refused_with_the_reason(name: str, target: str) -> None:
    err = refused(name, target)
    assert "runs groups of 2 pods (a leader and its workers" in err and "one sister pod cannot hold a group" in err


def test_a_one_pod_leaderworkerset_plans_from_its_leader(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """LWS's own example at size 1: the leader's template, its `sh -c` (ray, then the api_server) read."""
    (lws,) = [d for d in yaml.safe_load_all((PROJECTS / "lws-vllm-gpu.yaml").read_text()) if d]
    lws["spec"]["leaderWorkerTemplate"]["size"] = 1
    (tmp_path / "lws.yaml").write_text(yaml.safe_dump(lws))
    assert main(argv(tmp_path / "lws.yaml", "leaderworkerset/vllm", "serving")) == 0
    out = capsys.readouterr().out
    (pod,) = planned_pods(out)
    assert [c["name"] for c in pod["spec"]["containers"]] == ["vllm-leader", "kernelscope-tools"]
    assert "leaderworkerset serving/vllm: 2 replica(s)" in out
    assert "16 GPU worker process(es)" in out  # TP 8 x PP 2, as its command says


def test_aibrix_python_m_entrypoint_on_v0_7_1(capsys: pytest.CaptureFixture[str]) -> None:
    out, pod = plan(capsys, "aibrix-model.yaml", "deploy/deepseek-r1-distill-llama-8b", "default")
    assert "vLLM 0.7.1 (the image tag vllm/vllm-openai:v0.7.1) has no CUDA-profiler switch" in out


def kserve_deployment(tmp_path: Path) -> Path:
    """The Deployment KServe's controller makes for the single-node LLMInferenceService example: its
    well-known template's container (bash -c ... eval "exec vllm serve ... $@", published as is) with
    the service's resources, named <name>-kserve and labelled as the controller labels it."""
    (svc,) = [d for d in yaml.safe_load_all((PROJECTS / "kserve-llmisvc-qwen2-7b-gpu.yaml").read_text()) if d]
    (conf,) = [d for d in yaml.safe_load_all((PROJECTS / "kserve-llmisvcconfig-llm-template.yaml").read_text()) if d]
    name = svc["metadata"]["name"]
    main_container = copy.deepcopy(conf["spec"]["template"]["containers"][0])
    main_container["resources"] = svc["spec"]["template"]["containers"][0]["resources"]
    main_container["command"] = [*main_container["command"], "--tensor-parallel-size", "1"]  # the service's args
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "llminferenceservice",
              "app.kubernetes.io/component": "llminferenceservice-workload", "kserve.io/component": "workload"}
    dep = {"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": f"{name}-kserve", "namespace": "serving", "labels": labels},
           "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                    "template": {"metadata": {"labels": labels}, "spec": {"containers": [main_container]}}}}
    (tmp_path / "kserve.yaml").write_text(yaml.safe_dump_all([svc, dep]))
    return tmp_path / "kserve.yaml"


def test_kserve_is_captured_through_the_deployment_it_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = kserve_deployment(tmp_path)
    assert main(argv(manifest, "llminferenceservice/qwen2-7b-instruct-single", "serving")) == 0
    out = capsys.readouterr().out
    (pod,) = planned_pods(out)
    cmd = gpu_of(pod, "main")["command"]
    # the eval'd server read: vLLM (its serving window asked for), its positional args passed on after "--"
    assert cmd[-5:] == ["--", "--tensor-parallel-size", "1", "--profiler-config.profiler", "cuda"]
    assert cmd[-7] == "-c" and "--profile-from-start" in cmd
    assert "llminferenceservice/qwen2-7b-instruct-single runs deployment/qwen2-7b-instruct-single-kserve" in out
    assert "image ghcr.io/llm-d/llm-d-cuda:v0.7.0" in out


def test_kserve_with_no_deployment_in_the_file_says_what_to_plan_from(tmp_path: Path) -> None:
    err = refused(PROJECTS / "kserve-llmisvc-qwen2-7b-gpu.yaml", "llminferenceservice/qwen2-7b-instruct-single")
    assert "no Deployment labelled for llminferenceservice/qwen2-7b-instruct-single" in err


@pytest.mark.parametrize(("resources", "env", "said"), [
    ({"nvidia.com/mig-3g.40gb": "1"}, {}, "a MIG slice (nvidia.com/mig-3g.40gb): ncu profiles an isolated compute "
                                          "instance as usual, but cannot read units shared"),
    ({"nvidia.com/gpu.shared": "1"}, {}, "a shared GPU (nvidia.com/gpu.shared): other pods' kernels run on it"),
    ({"nvidia.com/gpu": "1"}, {"CUDA_MPS_PIPE_DIRECTORY": "/mps"}, "a shared GPU (CUDA_MPS_PIPE_DIRECTORY)"),
])
def test_mig_and_shared_gpus_are_explained(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           resources: dict[str, str], env: dict[str, str], said: str) -> None:
    (dep,) = [d for d in yaml.safe_load_all((PROJECTS / "vllm-chart-helm-default.yaml").read_text())
              if d and d.get("kind") == "Deployment"]
    gpu = dep["spec"]["template"]["spec"]["containers"][0]
    gpu["resources"] = {"limits": resources, "requests": resources}
    gpu["env"] = [*(gpu.get("env") or []), *({"name": k, "value": v} for k, v in env.items())]
    (tmp_path / "d.yaml").write_text(yaml.safe_dump(dep))
    assert main(argv(tmp_path / "d.yaml", "deploy/vllm-deployment-vllm", "serving")) == 0
    out = capsys.readouterr().out
    assert f"[warn] gpu-sharing: {said}" in out and "[ok] gpu-container" in out


def test_a_real_secure_capture_reads_as_the_window_it_was_taken_in(capsys: pytest.CaptureFixture[str]) -> None:
    """tests/fixtures/k8s_secure: real vLLM 0.26 behind an API key, captured through a sister on the
    H200 (GPU-host mode): the window vLLM's dotted profiler option opened, its one decode GEMM, no key."""
    import json

    bundle = PROJECTS.parents[1] / "k8s_secure"
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert manifest["scoping"]["window"] == "serving" and manifest["kubernetes"]["strategy"] == "wrap"
    (cap,) = manifest["captures"]
    assert cap["ncu_argv"][-2:] == ["--profiler-config.profiler", "cuda"] and cap["passes"] == [12]
    assert "sk-e2e-key-never-printed" not in (bundle / "manifest.json").read_text()
    assert main(["analyze", str(bundle), "--format", "json"]) == 0
    (kernel,) = json.loads(capsys.readouterr().out)["kernels"]
    assert kernel["name"] == "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT" and kernel["bound"] == "memory"
    assert kernel["duration_ns"] == 16736.0
