"""kernelscope against real vLLM 0.26 on the H200 (../shared/vllm), one stage a call of the device
tool (each must end inside 10 minutes; the machine stays warm between back-to-back calls). Each
stage prints one JSON document and writes it, with the bundles' reports, under OUTDIR.

    python3 bench/device/vllm_e2e.py offline OUTDIR   # kernels listing; capture of FA3, its combine, nvjet GEMMs,
                                               # inductor Triton and the KV-cache write, in vLLM's own
                                               # serving window (llm.start_profile), one run
    python3 bench/device/vllm_e2e.py serve OUTDIR     # launch + capture --attach against the OpenAI server, started
                                               # together; the server serves afterwards
    python3 bench/device/vllm_e2e.py k8s OUTDIR       # k8s capture of the server as a Deployment (GPU-host mode):
                                               # serving window, time to bundle, cost per request, nothing left
    python3 bench/device/vllm_e2e.py secure OUTDIR    # the same server wanting an API key (VLLM_API_KEY from a Secret,
                                               # production-stack's secure setup): warm-ups carry it by reference
    python3 bench/device/vllm_e2e.py statefulset OUTDIR  # the server as a StatefulSet with a volumeClaimTemplate
    python3 bench/device/vllm_e2e.py production OUTDIR   # the MoE server (make_moe.py, at $MOE) without ncu: its
                                               # latency a 32-token completion, the baseline of `mux`
    python3 bench/device/vllm_e2e.py mux OUTDIR          # the MoE server held by `kernelscope launch`; FA3, nvjet,
                                               # fused MoE and RMS norm captured replayed, then --multiplex,
                                               # requests timed throughout; both bundles in OUTDIR/mux.tar.xz

Needs: the wheel set installed on PYTHONPATH, the model at $TINY (default /tmp/tiny: make/vllm/make_tiny.py),
ncu on PATH; `k8s` also the cluster up in GPU-host mode (KUBECONFIG set).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import zlib
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
PY = sys.executable
KS = [PY, "-m", "kernelscope.cli"]
TINY = os.environ.get("TINY", "/tmp/tiny")
MOE = os.environ.get("MOE", "/tmp/moe")
NCU = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
SERVER = [PY, "-m", "vllm.entrypoints.openai.api_server", "--model", TINY, "--served-model-name", "tiny",
          "--max-model-len", "1024", "--gpu-memory-utilization", "0.25", "--max-num-seqs", "8"]
BODY = json.dumps({"model": "tiny", "prompt": "hello world the quick brown fox", "max_tokens": 32,
                   "ignore_eos": True}).encode()
T0 = time.monotonic()


def ks(*args: str, timeout: float = 560) -> dict[str, Any]:
    t = time.monotonic()
    res = subprocess.run([*KS, *args], capture_output=True, text=True, timeout=timeout,
                         env={**os.environ, "COLUMNS": "220"})
    return {"argv": ["kernelscope", *args], "exit": res.returncode, "s": round(time.monotonic() - t, 1),
            "stdout": res.stdout[-6000:], "stderr": res.stderr[-4000:]}


def post(port: int, path: str = "/v1/completions", body: bytes = BODY, timeout: float = 120,
         key: str | None = None) -> tuple[int, float]:
    t = time.monotonic()
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body,
                                 headers={"Content-Type": "application/json",
                                          **({"Authorization": f"Bearer {key}"} if key else {})})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        r.read()
        return r.status, round(time.monotonic() - t, 3)


def serving(port: int, timeout: float) -> float | None:
    """Seconds until the server answers /health (no API key guards it), or None."""
    t = time.monotonic()
    while time.monotonic() - t < timeout:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                return round(time.monotonic() - t, 1)
        except OSError:
            time.sleep(1)
    return None


def keep(bundle: Path, out: Path, name: str) -> list[str]:
    """The bundle's reports, xz-compressed into OUT (the device tool brings back 8 files at most)."""
    kept = []
    for rep in sorted((bundle / "ncu-profiles").glob("*.ncu-rep")) if bundle.exists() else []:
        dst = out / f"{name}-{rep.stem.split('-', 1)[-1][:30]}.ncu-rep.xz"
        subprocess.run(["xz", "-9", "-T4", "-c", str(rep)], stdout=dst.open("wb"), check=True)
        kept.append(dst.name)
    if bundle.exists():
        shutil.copy(bundle / "manifest.json", out / f"{name}-manifest.json")
    return kept


def analysis(bundle: Path) -> dict[str, Any]:
    res = ks("analyze", str(bundle), "--format", "json")
    if res["exit"] != 0:
        return res
    doc = json.loads(res["stdout"]) if res["stdout"].strip().startswith("{") else {}
    table = ks("analyze", str(bundle))
    return {"table": table["stdout"], "kernels": [
        {k: v for k, v in kern.items() if k in ("name", "name_full", "bound", "provisional", "pct_sol", "ceiling_key",
                                               "duration_ns", "tensor_path", "verdict", "grid", "block")}
        | {"provenance": kern["provenance"]["family"], "levers": [lv["rule"] for lv in kern["next_levers"]][:4]}
        for kern in doc.get("kernels", [])]}


def offline(out: Path) -> dict[str, Any]:
    result: dict[str, Any] = {}
    prog = [PY, str(REPO / "bench/workloads/vllm_offline.py"), TINY]
    result["kernels"] = ks("kernels", "--launch-count", "6000", "--format", "json", "--", *prog, "2")
    (out / "kernels.json").write_text(result["kernels"]["stdout"])
    result["kernels"]["stdout"] = result["kernels"]["stdout"][:1500]
    bundle = Path("/tmp/b_offline")
    shutil.rmtree(bundle, ignore_errors=True)
    result["capture"] = ks("capture", "--one-run", "--kernel", "regex:FlashAttnFwdSm90", "--kernel",
                           "regex:FlashAttnFwdCombine", "--kernel", "regex:nvjet", "--kernel", r"regex:^triton_",
                           "--kernel", "regex:reshape_and_cache", "--profile-from-start", "off", "--launch-skip", "40",
                           "--launch-count", "2", "--context", "model=tiny Llama (Llama-3-8B layer shapes, 4 layers)",
                           "--out", str(bundle), "--", *prog, "2", "--window")
    result["analysis"] = analysis(bundle)
    result["kept"] = keep(bundle, out, "offline")
    return result


def _capture_attach(port: int, bundle: Path, log: Path) -> subprocess.Popen[str]:
    shutil.rmtree(bundle, ignore_errors=True)
    return subprocess.Popen([*KS, "capture", "--attach", f"127.0.0.1:{port}", "--one-run", "--kernel",
                             "regex:FlashAttnFwdSm90", "--kernel", "regex:nvjet", "--launch-count", "1",
                             "--profile-from-start", "off", "--timeout", "300", "--out", str(bundle),
                             "--context", "model=tiny Llama (Llama-3-8B layer shapes)"],
                            stdout=log.open("w"), stderr=subprocess.STDOUT, text=True)


def _watch_ports(seen: list[dict[str, Any]], stop: threading.Event) -> None:
    """Every second: which process listens on which ncu attach port (the API server, its EngineCore)."""
    from kernelscope.capture.launcher import listeners

    last: Any = None
    while not stop.is_set():
        now = [(x.port, x.pid, x.title[:60]) for x in listeners(None)]
        if now != last:
            seen.append({"t_s": round(time.monotonic() - T0, 1), "listeners": now})
            last = now
        stop.wait(1.0)


def serve(out: Path) -> dict[str, Any]:
    """`kernelscope launch` and `kernelscope capture --attach` started together, as the README shows;
    the server's CUDA profiler on, so the capture's window is serving traffic (POST /start_profile).
    Records which process listens on which attach port; if the server does not serve while the first
    attach waits and another process listens on another port, attaches to that one too, and says so."""
    result: dict[str, Any] = {}
    port = 8123
    log = (out / "server.log").open("w")
    server = subprocess.Popen([*KS, "launch", "--hold-timeout", "300", "--", *SERVER, "--port", str(port),
                               "--profiler-config", '{"profiler": "cuda"}'], stdout=log, stderr=subprocess.STDOUT,
                              env={**os.environ, "PYTHONUNBUFFERED": "1"})
    seen: list[dict[str, Any]] = []
    stop = threading.Event()
    watcher = threading.Thread(target=_watch_ports, args=(seen, stop), daemon=True)
    watcher.start()
    bundle = Path("/tmp/b_attach")
    captures = [(49152, _capture_attach(49152, bundle, out / "capture-49152.log"))]
    result["serving_after_s"] = serving(port, 170)
    if result["serving_after_s"] is None:  # held elsewhere? attach to the other listener
        others = sorted({p for snap in seen for p, _, _ in snap["listeners"] if p != 49152})
        if others:
            captures[0][1].kill()
            bundle = Path(f"/tmp/b_attach_{others[0]}")
            captures.append((others[0], _capture_attach(others[0], bundle, out / f"capture-{others[0]}.log")))
            result["second_attach"] = {"port": others[0], "t_s": round(time.monotonic() - T0, 1)}
            result["serving_after_s_second"] = serving(port, 200)
    capture = captures[-1][1]
    replies: list[Any] = []
    if result.get("serving_after_s") is not None or result.get("serving_after_s_second") is not None:
        replies.append(("start_profile", *post(port, "/start_profile", b"{}")))
        while capture.poll() is None and time.monotonic() - T0 < 470:
            replies.append(("completion", *post(port)))
        if capture.poll() is None:
            capture.kill()
        replies.append(("stop_profile", *post(port, "/stop_profile", b"{}")))
        replies += [("after", *post(port)) for _ in range(5)]
    for _, c in captures:
        if c.poll() is None:
            c.kill()
        c.wait()
    result["captures"] = [{"port": p, "exit": c.returncode, "output": (out / f"capture-{p}.log").read_text()[-3000:]}
                          for p, c in captures]
    result["replies"] = replies
    result["served_after_capture"] = all(r[1] == 200 for r in replies if r[0] == "after") and \
        any(r[0] == "after" for r in replies)
    stop.set()
    result["listeners"] = seen
    server.terminate()
    try:
        server.wait(timeout=60)
    except subprocess.TimeoutExpired:
        server.kill()
    log.close()
    result["launch_said"] = [x for x in (out / "server.log").read_text().splitlines() if "kernelscope:" in x][-8:]
    result["analysis"] = analysis(bundle)
    result["kept"] = keep(bundle, out, "attach")
    return result


NS = "serving"


def kubectl(*args: str, check: bool = True, stdin: str | None = None) -> str:
    return subprocess.run(["kubectl", *args], capture_output=True, text=True, check=check, input=stdin).stdout


def pod_port(pod: str) -> int:
    return 8100 + zlib.crc32(pod.encode()) % 500


def deployment(name: str = "llama", kind: str = "Deployment", extra_env: tuple[dict[str, Any], ...] = ()
               ) -> dict[str, Any]:
    env = [*extra_env, {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
           {"name": "PYTHONPATH", "value": os.environ.get("PYTHONPATH", "")},
           {"name": "HOME", "value": "/dev/shm"}, {"name": "VLLM_USE_FLASHINFER_SAMPLER", "value": "0"},
           {"name": "HF_HUB_OFFLINE", "value": "1"}, {"name": "VLLM_NO_USAGE_STATS", "value": "1"},
           {"name": "PYTHONUNBUFFERED", "value": "1"},
           {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}}]
    server = {"name": "vllm", "image": "vllm/vllm-openai:v0.26.0",
              "command": [PY, str(REPO / "tests/fixtures/make/vllm/vllm_serve_pod.py")], "args": SERVER[3:],
              "env": env, "resources": {"limits": {"nvidia.com/gpu": "1"}},
              "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}]}
    agent = {"name": "metrics-agent", "image": "busybox", "command": ["sleep", "3600"]}
    doc = {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": NS},
           "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                    "template": {"metadata": {"labels": {"app": name}},
                                 "spec": {"containers": [agent, server],
                                          "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory"}}]}}}}
    if kind == "StatefulSet":  # a model cache per replica, as a volumeClaimTemplate
        doc["spec"]["serviceName"] = name
        doc["spec"]["volumeClaimTemplates"] = [{"metadata": {"name": "cache"}, "spec": {
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}}}}]
        server["volumeMounts"].append({"name": "cache", "mountPath": "/cache"})
    return doc


KEY = "sk-e2e-key-never-printed"


def real(case: str, out: Path) -> dict[str, Any]:
    """A real deployment form captured end to end: `secure` (vLLM wanting VLLM_API_KEY from a Secret,
    production-stack's secure setup) or `statefulset` (a volumeClaimTemplate); the vLLM release is
    read from the running pod, as a user's run would."""
    kubectl("create", "namespace", NS, check=False)
    kubectl("-n", NS, "create", "secret", "generic", "hf", "--from-literal=token=hf_e2e_secret_value", check=False)
    kubectl("-n", NS, "create", "secret", "generic", "vllm-secrets", f"--from-literal=vllmApiKey={KEY}", check=False)
    key_env = {"name": "VLLM_API_KEY", "valueFrom": {"secretKeyRef": {"name": "vllm-secrets", "key": "vllmApiKey"}}}
    name, kind = ("secure", "Deployment") if case == "secure" else ("llama-sts", "StatefulSet")
    kubectl("apply", "-f", "-", stdin=json.dumps(deployment(name, kind, (key_env,) if case == "secure" else ())))
    pod = f"{name}-0" if kind == "StatefulSet" else ""
    t = time.monotonic()
    while not pod and time.monotonic() - t < 60:
        items = json.loads(kubectl("-n", NS, "get", "pods", "-l", f"app={name}", "-o", "json"))["items"]
        pod = items[0]["metadata"]["name"] if items else ""
        time.sleep(0.5)
    result: dict[str, Any] = {"case": case, "production_serving_after_s": serving(pod_port(pod), 300)}
    key = KEY if case == "secure" else None
    try:
        post(pod_port(pod))
        result["production_without_key"] = 200
    except urllib.error.HTTPError as exc:
        result["production_without_key"] = exc.code
    result["production_per_request_s"] = [post(pod_port(pod), key=key)[1] for _ in range(6)][2:]
    uid = json.loads(kubectl("-n", NS, "get", "pod", pod, "-o", "json"))["metadata"]["uid"]
    target = f"{'deploy' if kind == 'Deployment' else 'statefulset'}/{name}"
    result["inspect"] = ks("k8s", "inspect", "-n", NS, target, "--tools-image", "host", timeout=120)
    release = f"ks-{case[:6]}"
    bundle = Path(f"/tmp/b_{case}")
    shutil.rmtree(bundle, ignore_errors=True)
    result["capture"] = ks("k8s", "capture", "-n", NS, target, "--kernel", "regex:nvjet", "--launch-count", "1",
                           "--warmup-requests", "3", "--warmup-port", str(pod_port(release)), "--warmup-body",
                           BODY.decode(), "--ncu-in-image", NCU, "--tools-image", "host", "--release", release,
                           "--timeout", "400", "--out", str(bundle), timeout=480)
    if bundle.exists():
        manifest = json.loads((bundle / "manifest.json").read_text())
        result["window"] = manifest["scoping"].get("window")
        replies = json.loads((bundle / "warmup.json").read_text()) if (bundle / "warmup.json").exists() else []
        result["sister_requests"] = [(r["path"], r["status"], r["seconds"], r.get("tool")) for r in replies]
        values = json.loads((bundle / "sister-values.json").read_text())
        result["sister_volumes"] = [v for v in values["spec"]["volumes"] if "persistentVolumeClaim" in v]
        result["key_in_bundle"] = any(KEY.encode() in f.read_bytes() for f in bundle.rglob("*") if f.is_file())
    result["key_printed"] = KEY in json.dumps([result["inspect"], result["capture"]])
    result["analysis"] = analysis(bundle)
    result["kept"] = keep(bundle, out, case)
    after = json.loads(kubectl("-n", NS, "get", "pod", pod, "-o", "json"))
    result["production_untouched"] = (after["metadata"]["uid"] == uid and
                                      all(c.get("restartCount", 0) == 0 for c in after["status"]["containerStatuses"]))
    result["left_behind"] = {"pods": kubectl("-n", NS, "get", "pods", "-l", "kernelscope.dev/owner=kernelscope",
                                             "-o", "name").split(),
                             "releases": subprocess.run(["helm", "-n", NS, "list", "-q"], capture_output=True,
                                                        text=True).stdout.split()}
    kubectl("-n", NS, "delete", kind.lower(), name, "--wait=true", check=False)
    return result


def k8s(out: Path) -> dict[str, Any]:
    result: dict[str, Any] = {}
    kubectl("create", "namespace", NS, check=False)
    kubectl("-n", NS, "create", "secret", "generic", "hf", "--from-literal=token=hf_e2e_secret_value", check=False)
    kubectl("apply", "-f", "-", stdin=json.dumps(deployment()))
    kubectl("-n", NS, "rollout", "status", "deploy/llama", "--timeout=120s")
    pod = json.loads(kubectl("-n", NS, "get", "pods", "-l", "app=llama", "-o", "json"))["items"][0]
    name, uid = pod["metadata"]["name"], pod["metadata"]["uid"]
    result["production_serving_after_s"] = serving(pod_port(name), 240)
    result["production_per_request_s"] = [post(pod_port(name))[1] for _ in range(8)][2:]
    release = "ks-vllm"
    bundle = Path("/tmp/b_k8s")
    shutil.rmtree(bundle, ignore_errors=True)
    result["capture"] = ks("k8s", "capture", "-n", NS, "deploy/llama", "--kernel", "regex:FlashAttnFwdSm90",
                           "--kernel", "regex:nvjet", "--launch-count", "1", "--warmup-requests", "3",
                           "--warmup-port", str(pod_port(release)), "--warmup-body", BODY.decode(),
                           "--ncu-in-image", NCU, "--tools-image", "host", "--release", release, "--timeout", "360",
                           "--out", str(bundle), timeout=420)
    if bundle.exists():
        manifest = json.loads((bundle / "manifest.json").read_text())
        result["window"] = manifest["scoping"].get("window")
        result["context"] = manifest.get("context")
        replies = json.loads((bundle / "warmup.json").read_text()) if (bundle / "warmup.json").exists() else []
        result["sister_requests"] = [(r["path"], r["t_s"], r["seconds"], r["exit_code"]) for r in replies]
    result["analysis"] = analysis(bundle)
    result["kept"] = keep(bundle, out, "k8s")
    after = json.loads(kubectl("-n", NS, "get", "pods", "-l", "app=llama", "-o", "json"))["items"][0]
    result["production_untouched"] = (after["metadata"]["uid"] == uid and
                                      all(c.get("restartCount", 0) == 0 for c in after["status"]["containerStatuses"]))
    result["left_behind"] = {"pods": kubectl("-n", NS, "get", "pods", "-l", "kernelscope.dev/owner=kernelscope",
                                             "-o", "name").split(),
                             "releases": subprocess.run(["helm", "-n", NS, "list", "-q"], capture_output=True,
                                                        text=True).stdout.split()}
    kubectl("-n", NS, "delete", "deploy", "llama", "--wait=true", check=False)
    return result


MUX_KERNELS = ("regex:FlashAttnFwdSm90", "regex:nvjet", "regex:fused_moe_kernel", "regex:rms_norm")


def moe_server(port: int) -> list[str]:
    if not (Path(MOE) / "model.safetensors").exists():
        subprocess.run([PY, str(REPO / "tests/fixtures/make/vllm/make_moe.py"), MOE], check=True, capture_output=True)
    return [*SERVER[:4], MOE, *SERVER[5:], "--port", str(port)]


class Requests(threading.Thread):
    """32-token completions back to back, each timed: (wall start, seconds or None, status)."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.port, self.done, self.samples = port, threading.Event(), []  # type: ignore[var-annotated]

    def run(self) -> None:
        while not self.done.is_set():
            t = time.time()
            try:
                status, seconds = post(self.port, timeout=300)
                self.samples.append((t, seconds, status))
            except (OSError, urllib.error.URLError) as exc:
                self.samples.append((t, None, repr(exc)[:80]))
                time.sleep(1)

    def window(self, a: float, b: float) -> dict[str, Any]:
        inside = sorted(s for t, s, _ in self.samples if a <= t <= b and s is not None)
        failed = sum(1 for t, s, _ in self.samples if a <= t <= b and s is None)
        if not inside:
            return {"requests": 0, "failed": failed}
        return {"requests": len(inside), "failed": failed, "median_s": inside[len(inside) // 2],
                "p90_s": inside[int(len(inside) * 0.9)], "max_s": inside[-1], "wall_s": round(b - a, 1)}


def production(out: Path) -> dict[str, Any]:
    """The MoE server as production runs it, no ncu: the latency a capture is held against."""
    port = 8124
    log = (out / "production.log").open("w")
    server = subprocess.Popen(moe_server(port), stdout=log, stderr=subprocess.STDOUT)
    result: dict[str, Any] = {"serving_after_s": serving(port, 300)}
    if result["serving_after_s"] is not None:
        [post(port) for _ in range(3)]
        result["per_request_s"] = sorted(post(port)[1] for _ in range(20))
    server.terminate()
    server.wait(60)
    return result


def _mux_capture(name: str, *flags: str) -> tuple[subprocess.Popen[str], Path]:
    bundle = Path(f"/tmp/b_{name}")
    shutil.rmtree(bundle, ignore_errors=True)
    args = [*KS, "capture", "--attach", "127.0.0.1:49152", *[x for k in MUX_KERNELS for x in ("--kernel", k)],
            "--launch-count", "2", "--timeout", "420", "--out", str(bundle), *flags,
            "--context", "model=MoE of Qwen3-30B-A3B layer shapes, 2 layers, bf16 (make_moe.py)"]
    return subprocess.Popen(args, stdout=(Path("/tmp") / f"{name}.log").open("w"), stderr=subprocess.STDOUT,
                            text=True), bundle


def mux(out: Path) -> dict[str, Any]:
    """The MoE server held by `kernelscope launch`: first the roofline list replayed (one session from
    start-up, nothing profiled before POST /start_profile), then --multiplex (a session a counter group
    against the serving process), 32-token completions timed throughout."""
    port = 8125
    log = (out / "sister.log").open("w")
    server = subprocess.Popen([*KS, "launch", "--hold-timeout", "300", "--", *moe_server(port),
                               "--profiler-config", '{"profiler": "cuda"}'], stdout=log, stderr=subprocess.STDOUT)
    result: dict[str, Any] = {}
    replayed, rb = _mux_capture("replayed", "--one-run", "--profile-from-start", "off")
    result["serving_after_s"] = serving(port, 300)
    requests = Requests(port)
    windows: dict[str, tuple[float, float]] = {}
    bundles = {"replayed": rb}
    if result["serving_after_s"] is not None:
        [post(port) for _ in range(3)]
        requests.start()
        time.sleep(10)
        windows["held, before any capture"] = (time.time() - 10, time.time())
        post(port, "/start_profile", b"{}")
        t = time.time()
        replayed.wait(440)
        windows["replayed capture"] = (t, time.time())
        time.sleep(10)
        windows["held, between captures"] = (time.time() - 10, time.time())
        multiplexed, bundles["multiplexed"] = _mux_capture("multiplexed", "--multiplex")
        t = time.time()
        try:
            multiplexed.wait(T0 + 540 - time.monotonic())
        except subprocess.TimeoutExpired:
            multiplexed.kill()
        windows["multiplexed capture"] = (t, time.time())
        time.sleep(5)
        requests.done.set()
        result["captures"] = {"replayed": replayed.returncode, "multiplexed": multiplexed.returncode}
    result["latency"] = {k: requests.window(a, b) for k, (a, b) in windows.items()}
    result["logs"] = {k: (Path("/tmp") / f"{k}.log").read_text()[-2500:] for k in bundles
                      if (Path("/tmp") / f"{k}.log").exists()}
    server.terminate()
    try:
        server.wait(60)
    except subprocess.TimeoutExpired:
        server.kill()
    runs = {}
    for k, b in bundles.items():
        if (b / "manifest.json").exists():
            caps = json.loads((b / "manifest.json").read_text())["captures"]
            runs[k] = [{"group": c.get("group"), "passes": c.get("passes"), "exit": c.get("exit_code"),
                        "s": c.get("wall_s"), "error": c.get("error")} for c in caps]
    result["runs"] = runs
    there = [str(b) for b in bundles.values() if b.exists()]
    subprocess.run(["tar", "-cJf", str(out / "mux.tar.xz"), *there], check=False)
    return result


def main() -> None:
    stage, out = sys.argv[1], Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    stages = {"offline": offline, "serve": serve, "k8s": k8s, "secure": lambda o: real("secure", o),
              "statefulset": lambda o: real("statefulset", o), "production": production, "mux": mux}
    result = stages[stage](out)
    result["stage_s"] = round(time.monotonic() - T0, 1)
    text = json.dumps(result, indent=1, default=str)
    (out / f"{stage}.json").write_text(text)
    print(text[-9000:])


if __name__ == "__main__":
    main()
