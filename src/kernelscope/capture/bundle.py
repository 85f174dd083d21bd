"""The bundle on disk: ncu-profiles/<kernel>.ncu-rep plus CSV exports, capture_sources.json and
manifest.json with the full context. Built in a temp dir and renamed into place when complete."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import KernelscopeError

SCHEMA_VERSION = 1
PROFILES = "ncu-profiles"


def slug(kernel: str | None, index: int) -> str:
    """A file name for a kernel filter: '01-nvjet_gemm' for 'regex:nvjet|gemm'."""
    text = (kernel or "all-kernels").removeprefix("regex:")
    text = re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("._")[:60] or "kernel"
    return f"{index:02d}-{text}"


def report_stem(kernel: str | None, index: int) -> str:
    """Where a capture's files go in a bundle, without suffix: 'ncu-profiles/01-nvjet'."""
    return f"{PROFILES}/{slug(kernel, index)}"


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def gpu_facts() -> dict[str, str | None]:
    """GPU name, driver and the CUDA version the driver supports, from nvidia-smi (None if absent)."""
    facts: dict[str, str | None] = {"gpu_name": None, "driver_version": None, "driver_cuda_version": None}
    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=30)
        head = subprocess.run(["nvidia-smi"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return facts
    if q.returncode == 0 and "," in q.stdout:
        name, driver = (x.strip() for x in q.stdout.splitlines()[0].split(",", 1))
        facts.update(gpu_name=name, driver_version=driver)
    m = re.search(r"CUDA Version:\s*([\d.]+)", head.stdout)
    facts["driver_cuda_version"] = m.group(1) if m else None
    return facts


@contextmanager
def staging(out: Path) -> Iterator[Path]:
    """A temp dir beside `out` that becomes `out` only if the block finishes."""
    if out.exists() and any(out.iterdir()):
        raise KernelscopeError(f"{out}: exists and is not empty; choose a new --out")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        (tmp / PROFILES).mkdir()
        yield tmp
        if out.exists():
            out.rmdir()
        tmp.rename(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def write_manifest(stage: Path, context: dict[str, Any], sources: list[dict[str, Any]]) -> None:
    """capture_sources.json, then manifest.json with the sha256 of every other file in the bundle."""
    (stage / "capture_sources.json").write_text(json.dumps(sources, indent=2) + "\n")
    artifacts = {
        str(p.relative_to(stage)): sha256(p) for p in sorted(stage.rglob("*")) if p.is_file()
    }
    reports = [name for name in artifacts if name.endswith(".ncu-rep")]
    manifest = {"schema_version": SCHEMA_VERSION, "kind": "kernelscope-bundle", **context,
                "reports": reports, "artifacts_sha256": artifacts}
    (stage / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
