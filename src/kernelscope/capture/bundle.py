"""The bundle on disk: ncu-profiles/<kernel>.ncu-rep plus CSV exports and ncu logs, and
manifest.json with the full context. Built in a hidden temp dir beside the target and renamed into
place when complete, so a bundle is whole or absent (readers skip hidden folders)."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import KernelscopeError
from ..manifest import FILE, PROFILES, BundleManifest, sha256_file
from ..report_manifest import GpuFacts


def slug(kernel: str | None, index: int) -> str:
    """A file name for a kernel filter: '01-nvjet_gemm' for 'regex:nvjet|gemm'."""
    text = (kernel or "all-kernels").removeprefix("regex:")
    text = re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("._-")[:60] or "kernel"
    return f"{index:02d}-{text}"


def report_stem(kernel: str | None, index: int) -> str:
    """Where a capture's files go in a bundle, without suffix: 'ncu-profiles/01-nvjet'."""
    return f"{PROFILES}/{slug(kernel, index)}"


def parse_gpu_facts(query: str, banner: str) -> GpuFacts:
    """GPU name and driver from `nvidia-smi --query-gpu=name,driver_version --format=csv,noheader`,
    and the CUDA version the driver supports from plain `nvidia-smi`."""
    name = driver = None
    first = query.strip().splitlines()[0] if query.strip() else ""
    if "," in first:
        name, driver = (x.strip() or None for x in first.split(",", 1))
    m = re.search(r"CUDA Version:\s*([\d.]+)", banner)
    return GpuFacts(name, driver, m.group(1) if m else None)


@contextmanager
def staging(out: Path) -> Iterator[Path]:
    """A hidden temp dir beside `out`, yielded for the caller to fill; never left behind."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise KernelscopeError(f"{out}: exists and is not an empty directory; choose a new --out")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".staging", dir=out.parent))
    except OSError as exc:
        raise KernelscopeError(f"{out}: cannot create the bundle here ({exc.strerror})") from exc
    try:
        (tmp / PROFILES).mkdir()
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def publish(stage: Path, manifest: BundleManifest, out: Path) -> Path:
    """Hash every file, write the manifest, and rename the staged bundle into place."""
    from dataclasses import replace

    artifacts = {str(p.relative_to(stage)): sha256_file(p) for p in sorted(stage.rglob("*")) if p.is_file()}
    done = replace(manifest, artifacts_sha256=artifacts,
                   reports=tuple(c.report for c in manifest.captures if c.report is not None))
    (stage / FILE).write_text(done.to_json())
    mask = os.umask(0)
    os.umask(mask)
    stage.chmod(0o777 & ~mask)  # mkdtemp made it private; a published bundle has the usual mode
    if out.exists():
        out.rmdir()
    stage.rename(out)
    return out
