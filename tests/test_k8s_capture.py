"""Captures on the emulated cluster (../shared/kube): a sister that captures, one whose init fails,
one whose ncu fails, signals at every phase, `--strategy direct`, and releases kernelscope owns
or does not. The cluster fixture and the helpers are test_k8s.py's."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernelscope.cli import main
from kernelscope.k8s import sister
from kernelscope.k8s.inspect import inspect
from kernelscope.k8s.kubectl import Kube
from test_k8s import NS, OWNED, apply, capture, deploy, kubectl, production, wait_gone
from test_k8s import cluster as cluster  # the session's cluster fixture, by name
from toyk8s import FAKE_NCU, SERVE, toy


# -- capture: success, failure, signals -----------------------------------------------------------
def test_wrap_capture_end_to_end(cluster: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    name = deploy(toy("toy", NS, env={"API_TOKEN": "tok-literal-secret"}))
    before = production(name)
    out = tmp_path / "live"
    code = main([*capture(name, "--kernel", "regex:nvjet", "--out", str(out))])
    err = capsys.readouterr().err
    assert code == 0, err
    m = json.loads((out / "manifest.json").read_text())
    assert m["transport"] == "pod" and m["kubernetes"]["strategy"] == "wrap" and m["kubernetes"]["tensor_parallel"] == 2
    (c,) = m["captures"]
    assert c["report"] and c["profiled"] == ["nvjet_sm90_tst_64x8_64x16_2x1_v_bz_NNT"] and c["passes"] == [9]
    assert "--filter-mode" in c["ncu_argv"] and c["exports"]  # TP=2: the window applies per GPU
    assert any(r["argv"][3] == "install" and r["argv"][-3:-1] == ["--", "ks-test"] for r in m["commands_run"])
    warm = json.loads((out / "warmup.json").read_text())
    assert len(warm) >= 2
    for f in out.rglob("*"):
        assert f.is_dir() or b"tok-literal-secret" not in f.read_bytes(), f
    assert wait_gone() == "" and production(name) == before


def test_init_failure_stops_in_seconds_with_the_log(cluster: None, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    name = deploy(toy("toy", NS))
    apply(toy("broken", NS, init_fails=True))  # production is fine; only its copy's init will fail
    kubectl("-n", NS, "patch", "deploy", "broken", "--type=json", "-p",
            '[{"op":"replace","path":"/spec/template/spec/initContainers/0/command","value":'
            '["sh","-c","echo cannot fetch the model; exit 1"]}]')
    del name
    t0 = time.monotonic()
    code = main([*capture("broken", "--kernel", "regex:nvjet", "--out", str(tmp_path / "b"))])
    err = capsys.readouterr().err
    assert code == 2 and time.monotonic() - t0 < 30
    assert "Init:Error" in err and "cannot fetch the model" in err and not (tmp_path / "b").exists()
    assert wait_gone() == ""


def test_ncu_error_in_the_log_stops_the_run(cluster: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    name = deploy(toy("noperms", NS, env={"FAKE_NCU_ERROR": "1"}))  # pods bind PORT_BASE + len(pod name): not slow's
    code = main([*capture(name, "--kernel", "regex:nvjet", "--out", str(tmp_path / "p"))])
    err = capsys.readouterr().err
    assert code == 2 and "ERR_NVGPUCTRPERM" in err and wait_gone() == ""


def said_until(proc: subprocess.Popen[str], text: str, seconds: float) -> None:
    """Read the capture's stderr until a line holds `text`; its end, or `seconds` passing, fails the
    test with what it said (a readline at the end of the pipe returns "" for ever)."""
    said, deadline = [], time.monotonic() + seconds
    while not said or text not in said[-1]:
        said.append(proc.stderr.readline() if proc.stderr else "")
        assert said[-1] != "" and time.monotonic() < deadline, f"never said {text!r}: {''.join(said)}"


def slow_capture_installed(out: Path) -> subprocess.Popen[str]:
    """A capture in its own process (so it can be signalled) of a toy whose ncu takes 120 s, two
    seconds after it said its sister is installed."""
    name = deploy(toy("slow", NS, env={"FAKE_NCU_DELAY": "120"}))
    proc = subprocess.Popen([sys.executable, "-m", "kernelscope.cli", *capture(name, "--kernel", "regex:nvjet",
                                                                              "--out", str(out))],
                            stderr=subprocess.PIPE, text=True)
    said_until(proc, "installed", 30)
    time.sleep(2)
    return proc


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_signals_clean_up(cluster: None, tmp_path: Path, sig: signal.Signals) -> None:
    proc = slow_capture_installed(tmp_path / "s")
    proc.send_signal(sig)
    assert proc.wait(timeout=60) == 128 + sig
    assert wait_gone() == "" and not (tmp_path / "s").exists()


def test_second_ctrl_c_during_cleanup_is_ignored(cluster: None, tmp_path: Path) -> None:
    proc = slow_capture_installed(tmp_path / "c")
    proc.send_signal(signal.SIGINT)
    said_until(proc, "cleaning up: uninstalling", 60)
    proc.send_signal(signal.SIGINT)  # while uninstalling
    code = proc.wait(timeout=60)
    rest = proc.stderr.read() if proc.stderr else ""
    assert code == 130 and wait_gone() == ""
    assert "SIGINT ignored: cleaning up (if this is stuck, run `kernelscope k8s cleanup`)" in rest


def test_direct_leaves_nothing_running_in_production(cluster: None, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """--strategy direct on a pod already started under `ncu --mode launch`: a debug container attaches;
    at the end the in-pod ncu and the container's sleep are ended by pid, so the container exits."""
    serve = f"echo 'INFO torch 2.9.0+cu128'; {SERVE}"
    name = deploy(toy("attachable", NS, command=[FAKE_NCU, "--mode", "launch", "sh", "-c", serve], args=[]))
    before = production(name)
    out = tmp_path / "direct"
    code = main(["k8s", "capture", "-n", NS, f"deploy/{name}", "--strategy", "direct", "--ncu-in-image", FAKE_NCU,
                 "--kernel", "regex:nvjet", "--timeout", "60", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    m = json.loads((out / "manifest.json").read_text())
    assert m["kubernetes"]["strategy"] == "direct" and m["kubernetes"]["release"] is None
    pod = json.loads(kubectl("-n", NS, "get", "pods", "-l", f"app={name}", "-o", "json"))["items"][0]
    deadline = time.monotonic() + 20
    while not all("terminated" in (s.get("state") or {}) for s in pod["status"]["ephemeralContainerStatuses"]):
        assert time.monotonic() < deadline, pod["status"]["ephemeralContainerStatuses"]
        time.sleep(0.5)
        pod = json.loads(kubectl("-n", NS, "get", "pods", "-l", f"app={name}", "-o", "json"))["items"][0]
    left = subprocess.run(["pgrep", "-f", "kernelscope-ncu.pid"], capture_output=True, text=True).stdout
    assert left == "" and production(name) == before


# -- ownership and cleanup --------------------------------------------------------------------------
def test_a_foreign_release_is_never_touched(cluster: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    name = deploy(toy("toy", NS))
    chart = tmp_path / "web"
    subprocess.run(["helm", "create", str(chart)], check=True, capture_output=True)
    subprocess.run(["helm", "-n", NS, "install", "web", str(chart), "--set", "image.repository=busybox"], check=True,
                   capture_output=True)
    assert main([*capture(name, "--kernel", "regex:nvjet", "--out", str(tmp_path / "o"), release="web")]) == 2
    assert "not kernelscope's" in capsys.readouterr().err
    assert main(["k8s", "cleanup", "-n", NS, "--release", "web"]) == 2
    assert "web" in subprocess.run(["helm", "-n", NS, "list", "-q"], capture_output=True, text=True).stdout.split()
    subprocess.run(["helm", "-n", NS, "uninstall", "web"], check=True, capture_output=True)


def test_cleanup_finds_expired_sisters(cluster: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ins = inspect(Kube(NS), "deploy/toy", "tools")
    for release, ttl, label in (("ks-old", -10, None), ("ks-new", 3600, None), ("ks-never", -10, "never"),
                                ("ks-huge", -10, "9" * 20)):
        opts = sister.SisterOptions(release=release, capture_id="x", ttl_s=3600)
        vals = sister.values(ins, opts, ["sleep", "3600"], now=time.time() + ttl - 3600)
        if label:  # set by hand: an expiry that is not unix seconds is unknown, never expired
            vals["labels"][sister.EXPIRES_LABEL] = label
        vf = tmp_path / f"{release}.json"
        vf.write_text(json.dumps(vals))
        subprocess.run(["helm", "-n", NS, "install", release, sister.chart_path(), "-f", str(vf), "--labels", OWNED],
                       check=True, capture_output=True)
    assert main(["k8s", "cleanup", "-n", NS, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "ks-never: capture x" in out and "expiry label 'never' is not unix seconds: expiry unknown" in out
    assert main(["k8s", "cleanup", "-n", NS, "--expired"]) == 0
    assert "ks-old" in capsys.readouterr().out
    left = subprocess.run(["helm", "-n", NS, "list", "-q"], capture_output=True, text=True).stdout.split()
    assert "ks-old" not in left and {"ks-new", "ks-never", "ks-huge"} <= set(left)
    assert main(["k8s", "cleanup", "-n", NS]) == 0 and wait_gone() == ""
