"""No secret value in any output: `capture --dry-run`, a local capture's bundle (manifest, logs,
exports) and its printout, and the report and analysis of that bundle. The pod path (`k8s capture
--dry-run`, `k8s inspect`, a pod capture's bundle) is checked in test_k8s.py against a real API
server. The capture runs a stand-in ncu (tests/local/fake-ncu.sh) whose program prints its own
arguments and environment, as vLLM does at start-up."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hostile import TALLY

FAKE_NCU = Path(__file__).parent / "local" / "fake-ncu.sh"
SECRETS = ("hf_xxxsecret1", "sk-xxxsecret2", "sk-envsecret3", "pw-secret4")
PROGRAM = ["env", f"HF_TOKEN={SECRETS[0]}", f"DB_PASSWORD={SECRETS[3]}", "sh", "-c",
           'echo "serving with args: $*; token $HF_TOKEN; key $OPENAI_API_KEY"', "server", "--api-key", SECRETS[1]]


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OPENAI_API_KEY": SECRETS[2]}
    return subprocess.run([sys.executable, "-m", "kernelscope.cli", *argv], capture_output=True, text=True, env=env,
                          timeout=300)


def leaks(*texts: str) -> list[str]:
    TALLY["tried"] += 1
    found = [s for s in SECRETS if any(s in t for t in texts)]
    TALLY["failures" if found else "handled"] += 1
    return found


def test_capture_dry_run_prints_no_secret(tmp_path: Path) -> None:
    res = run("capture", "--kernel", "regex:nvjet", "--out", str(tmp_path / "b"), "--dry-run", "--ncu", "ncu",
              "--context", f"auth_token={SECRETS[0]}", "--", *PROGRAM)
    assert res.returncode == 0, res.stderr
    assert "'HF_TOKEN=<redacted>'" in res.stdout and "--api-key '<redacted>'" in res.stdout
    assert leaks(res.stdout, res.stderr) == []


@pytest.mark.skipif(sys.platform != "linux", reason="the stand-in ncu is a POSIX shell script")
def test_capture_bundle_and_what_reads_it_hold_no_secret(tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    res = run("capture", "--kernel", "regex:nvjet", "--out", str(out), "--ncu", str(FAKE_NCU), "--", *PROGRAM)
    assert res.returncode == 0, res.stderr
    log = next(out.glob("ncu-profiles/*.log")).read_text()
    assert "serving with args" in log and "<redacted>" in log  # the program's output is kept, its secrets not
    files = [p.read_bytes().decode(errors="replace") for p in out.rglob("*") if p.is_file()]
    manifest = (out / "manifest.json").read_text()
    assert '"HF_TOKEN"' in manifest and "--api-key" in manifest  # names recorded, values not
    shown = [run("analyze", str(out), "--format", "json"), run("report", str(out), "--out", str(tmp_path / "r.html")),
             run("campaign", "import-ncu", "--root", str(tmp_path / "c"), "--campaign", "s", "--cell-id", "c1",
                 "--bundle", str(out))]
    assert all(r.returncode == 0 for r in shown), [r.stderr for r in shown]
    written = [p.read_bytes().decode(errors="replace") for p in [tmp_path / "r.html", *(tmp_path / "c").rglob("*")]
               if p.is_file()]
    assert leaks(res.stdout, res.stderr, *files, *written, *(r.stdout + r.stderr for r in shown)) == []
