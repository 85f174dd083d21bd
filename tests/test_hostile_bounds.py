"""Hostile input, issue 18: unbounded reads (special files, sparse files, huge lines, documents of
empty values, manifests listing one report many times, files that grow while read), links and
paths in bundles and campaigns (recovery that moved a folder from outside, link loops, NUL bytes),
and names read back from a cluster reaching kubectl's argv. Every input ends handled or as one
clean error line; the figures asserted are the ones that were unbounded before (memory, time,
bytes copied, connections made)."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import socket
import subprocess
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hostile import LAST_ERROR, cli
from kernelscope.campaign import cells as campaign_cells
from kernelscope.errors import InputError
from kernelscope.files import open_input
from kernelscope.ingest.csv_pages import LINE_LIMIT
from test_k8s import NS, apply, cluster, deploy, kubectl  # noqa: F401 - cluster: the API server fixture
from toyk8s import toy

FX = Path(__file__).parent / "fixtures"
READS, LINKS, NAMES = "unbounded reads", "paths and links", "names from a cluster"
REPORT = FX / "decode_gemm.ncu-rep"
KERNEL = "nvjet_sm90_tst_64x8_64x16_2x1_v_bz_NNT"  # the kernel of decode_gemm.ncu-rep
NSYS_HEADER = ('"Time (%)","Total Time (ns)","Instances","Avg (ns)","Med (ns)","Min (ns)","Max (ns)","StdDev (ns)",'
               '"Name"')  # as `nsys stats --report cuda_gpu_kern_sum --format csv` writes it


def error() -> str:
    return LAST_ERROR[0].strip()


def join(nsys: Path | str, flag: str = "--nsys", *fmt: str) -> list[str]:
    return ["join", "--ncu", str(REPORT), flag, str(nsys), "--hw", "h200-sxm", *fmt]


def peak_mib(argv: list[str], klass: str) -> tuple[str, float]:
    """The CLI's outcome and the peak of Python's allocations while it ran, in MiB."""
    tracemalloc.start()
    try:
        outcome = cli(argv, klass=klass)
        return outcome, tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def bundle_copy(tmp_path: Path, name: str = "b") -> Path:
    b = tmp_path / name
    shutil.copytree(FX / "bundle_attn_causal", b)
    return b


def manifest_reports(b: Path, reports: list[str]) -> None:
    m = json.loads((b / "manifest.json").read_text())
    m["reports"] = reports
    (b / "manifest.json").write_text(json.dumps(m))


def import_ncu(root: Path, *inputs: Path | str, cell: str = "c1") -> list[str]:
    return ["campaign", "import-ncu", "--root", str(root), "--campaign", "x", "--cell-id", cell,
            *map(str, inputs), "--hw", "h200-sxm"]


# -- unbounded reads -----------------------------------------------------------------------------------
def test_join_profiles_are_regular_files(tmp_path: Path) -> None:
    """/dev/zero was read until the OOM killer, a FIFO blocked for ever: both are refused unopened."""
    os.mkfifo(tmp_path / "fifo")
    for flag in ("--nsys", "--zymtrace"):
        for special in ("/dev/zero", tmp_path / "fifo", "/dev/null", tmp_path):
            t0 = time.monotonic()
            assert cli(join(special, flag), klass=READS) == "clean"
            assert time.monotonic() - t0 < 5  # refused before the ncu report is read
            assert "not a regular CSV" in error() or "is a directory" in error(), error()


def test_join_rows_are_checked_line_by_line(tmp_path: Path) -> None:
    """Rows short, nameless, not UTF-8 or over the csv module's field limit were tracebacks: each is
    now one error naming its file and line (chosen over skipping a row: a profile with a broken
    row cannot be trusted to weigh the frontier)."""
    good = f'"12.5","2000000","4","500000","500000","400000","600000","1","{KERNEL}"'
    rows = {"short": b'"12.5","2000000"', "nameless": good.replace(KERNEL, "").encode(),
            "blank-name": good.replace(KERNEL, "   ").encode(),
            "not-utf8": good.replace(KERNEL, "nvjet").encode().replace(b"nvjet", b"nv\xff\xfejet"),
            "over-128k": good.replace(KERNEL, "k" * 131_073).encode(), "extra": (good + ',"x"').encode()}
    for name, row in rows.items():
        p = tmp_path / f"{name}.csv"
        p.write_bytes(NSYS_HEADER.encode() + b"\n" + good.encode() + b"\n" + row + b"\n")
        assert cli(join(p), klass=READS) == "clean", name
        assert error().startswith(f"kernelscope: error: {p}: line 3"), error()
    p = tmp_path / "kern_sum.csv"  # a real one, with the BOM Windows tools write: read
    p.write_text("\ufeff" + NSYS_HEADER + "\n" + good + "\n", encoding="utf-8")
    out = tmp_path / "out.json"
    assert cli([*join(p), "--format", "json"], klass=READS) == "handled"
    from kernelscope import app

    joined = app.join(app.AnalyzeRequest((REPORT,), hw="h200-sxm"), p, None)
    assert [(r.kernel, r.nsys_total_ms) for r in joined.rows] == [(KERNEL, 2.0)]
    assert not out.exists()


def test_a_manifest_listing_one_report_many_times(tmp_path: Path) -> None:
    """10,000 listings of one report (480 KB) ran past 30 s at 3.5 GB: refused before any is read."""
    b = bundle_copy(tmp_path)
    rel = json.loads((b / "manifest.json").read_text())["reports"][0]
    manifest_reports(b, [rel] * 10_000)
    assert (b / "manifest.json").stat().st_size > 400_000
    t0 = time.monotonic()
    outcome, peak = peak_mib(["analyze", str(b), "--format", "json"], READS)
    assert outcome == "clean" and time.monotonic() - t0 < 5 and peak < 64, peak
    assert "bundle lists 10,000 reports, over the 1,024" in error()
    (b / "ncu-profiles" / "same.ncu-rep").symlink_to(Path(rel).name)  # a link inside: the same report
    for twice in ([rel, rel], [rel, f"./{rel}"], [rel, "ncu-profiles/same.ncu-rep"]):
        manifest_reports(b, twice)
        assert cli(["analyze", str(b)], klass=READS) == "clean"
        assert f"lists the report {rel!r} twice" in error(), error()
    manifest_reports(b, [rel])
    assert cli(["analyze", str(b), "--format", "json"], klass=READS) == "handled"


def test_a_gzip_of_one_long_line(tmp_path: Path) -> None:
    """A small gzip holding one huge line was read into one string (1.46 MB: 2.9 GB at peak); lines
    and records are now read at most LINE_LIMIT characters at a time."""
    raw = (FX / "decode_gemm-raw.csv").read_bytes().splitlines(keepends=True)
    p = tmp_path / "long.csv.gz"
    with gzip.open(p, "wb", compresslevel=9) as fh:
        fh.writelines(raw[:2])
        fh.write(b'"' + b"x" * (1 << 20) * 200 + b'"\n')  # 200 MiB in one line
    assert p.stat().st_size < 1_000_000
    outcome, peak = peak_mib(["analyze", str(p), "--format", "json"], READS)
    assert outcome == "clean" and f"line 3: a CSV line or record longer than {LINE_LIMIT:,}" in error(), error()
    assert peak < 120, peak  # the line alone was 200 MiB, twice over once decoded
    # one record over many lines, each within the limits (every field under the csv module's)
    record = b'"' + b'","'.join([b"y" * 100_000 + b"\n"] * 200) + b'"\n'
    q = tmp_path / "long-record.csv"
    q.write_bytes(b"".join(raw[:2]) + record)
    assert cli(["analyze", str(q)], klass=READS) == "clean"
    assert "line 3: a CSV line or record longer than" in error(), error()


def test_a_campaign_cell_of_empty_maps(tmp_path: Path) -> None:
    """150 MB of `{}` in a cell took 3.6 GB to parse: a cell holds at most one value in 16 bytes (we
    write one in ~45), and at most 256 MiB, both checked before it is parsed."""
    root = tmp_path / "camp"
    assert cli(import_ncu(root, REPORT), klass=READS) == "handled"
    cell = root / "x" / "cells" / "c1" / "ncu_kernels.json"
    doc = json.loads(cell.read_text())
    doc["kernels"] = []
    head = json.dumps(doc)[:-3]
    (root / "x" / "cells" / "c2").mkdir()
    hostile = root / "x" / "cells" / "c2" / "ncu_kernels.json"
    hostile.write_text(head + "[" + "{}," * 13_000_000 + "{}]}")  # 39 MB, 13 million maps
    outcome, peak = peak_mib(["campaign", "check", "--root", str(root), "--campaign", "x"], READS)
    assert outcome == "clean" and "holds some 26,000,014 JSON values, one in 1.5 bytes" in error(), error()
    assert peak < 150, peak  # the text read and refused; parsed, it took 3.6 GB from 150 MB
    hostile.unlink()
    with hostile.open("wb") as fh:
        fh.truncate(300 << 20)
    assert cli(["campaign", "check", "--root", str(root), "--campaign", "x"], klass=READS) == "clean"
    assert "campaign cell is 314,572,800 bytes, over the 268,435,456-byte limit" in error(), error()


def test_import_checks_sizes_before_copying(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 3.9 GB sparse file in a bundle was copied whole (3.9 GB written): every file is checked
    (regular, within the limit, no holes) and the whole import sized before a byte is copied."""
    root = tmp_path / "camp"
    b = bundle_copy(tmp_path)
    with (b / "ncu-profiles" / "extra.bin").open("wb") as fh:
        fh.truncate(3_900_000_000)
    assert cli(import_ncu(root, b), klass=READS) == "clean"
    assert "extra.bin: a sparse file (3,900,000,000 bytes long" in error(), error()
    (b / "ncu-profiles" / "extra.bin").unlink()
    with (b / "ncu-profiles" / "huge.bin").open("wb") as fh:
        fh.truncate(5 << 30)
    assert cli(import_ncu(root, b), klass=READS) == "clean"
    assert "huge.bin: file is 5,368,709,120 bytes, over the 4,294,967,296-byte limit" in error(), error()
    (b / "ncu-profiles" / "huge.bin").unlink()
    os.mkfifo(b / "ncu-profiles" / "fifo")
    assert cli(import_ncu(root, b), klass=READS) == "clean" and "not a regular file" in error()
    (b / "ncu-profiles" / "fifo").unlink()
    total = sum(f.stat().st_size for f in b.rglob("*") if f.is_file())  # 1.14 MB
    monkeypatch.setattr(campaign_cells, "MAX_IMPORT_BYTES", 1_000_000)
    assert cli(import_ncu(root, b), klass=READS) == "clean"
    assert f"b: {total:,} bytes to copy into the cell, over the 1,000,000 one import may copy" in error(), error()
    written = sum(f.stat().st_size for f in root.rglob("*") if f.is_file())
    assert written < 1_000 and not list((root / "x" / "cells").iterdir())  # a config, no cell, no stage
    monkeypatch.undo()
    assert cli(import_ncu(root, b), klass=READS) == "handled"


def test_a_sparse_report_is_refused_unread(tmp_path: Path) -> None:
    """A report of holes costs nothing to make; its framing walk read it 4 bytes a step."""
    p = tmp_path / "holes.ncu-rep"
    p.write_bytes(b"NVR\x00")
    with p.open("r+b") as fh:
        fh.truncate(1 << 30)
    t0 = time.monotonic()
    for argv in (["analyze", str(p)], ["diff", str(p), str(REPORT), "--hw", "h200-sxm"],
                 ["join", "--ncu", str(p), "--hw", "h200-sxm"]):
        assert cli(argv, klass=READS) == "clean" and "a sparse file (1,073,741,824 bytes long" in error(), error()
    assert time.monotonic() - t0 < 10


def test_a_file_that_grows_while_read_stops_at_its_limit(tmp_path: Path) -> None:
    p = tmp_path / "growing.csv"
    p.write_bytes(b"x" * 50)
    with open_input(p, limit=100) as fh, p.open("ab") as writer:
        writer.write(b"y" * 100)
        writer.flush()
        with pytest.raises(InputError, match="grew past the 100-byte limit while being read"):
            fh.read()


# -- paths and links -------------------------------------------------------------------------------
def test_recovery_never_moves_a_folder_from_outside(tmp_path: Path) -> None:
    """A link named like a cell moved aside made the next import move the folder it named into
    the campaign (and remove it from where it was); recovery now moves real folders only."""
    root, outside = tmp_path / "camp", tmp_path / "outside"
    (outside / "cell").mkdir(parents=True)
    (outside / "cell" / "data").write_text("not the campaign's")
    assert cli(import_ncu(root, REPORT), klass=LINKS) == "handled"
    cells = root / "x" / "cells"
    (cells / ".c9.old.abcdef").symlink_to(outside)
    aside = cells / ".c8.old.abcdef"
    aside.mkdir()
    (aside / "cell").symlink_to(outside / "cell")  # a real aside folder whose cell is a link
    assert cli(import_ncu(root, REPORT, cell="c2"), klass=LINKS) == "handled"
    assert (outside / "cell" / "data").read_text() == "not the campaign's"
    assert sorted(p.name for p in cells.iterdir()) == [".c9.old.abcdef", "c1", "c2"]  # the link left alone


def test_no_link_in_a_campaign_is_followed(tmp_path: Path) -> None:
    root, other = tmp_path / "camp", tmp_path / "other"
    assert cli(import_ncu(other, REPORT), klass=LINKS) == "handled"
    assert cli(import_ncu(root, REPORT), klass=LINKS) == "handled"
    cells = root / "x" / "cells"
    check = ["campaign", "check", "--root", str(root), "--campaign", "x"]
    (cells / "c2").symlink_to(other / "x" / "cells" / "c1")  # a cell that is another campaign's
    for argv in (check, ["campaign", "render", "--root", str(root), "--campaign", "x"],
                 ["campaign", "export", "--root", str(root), "--campaign", "x", "--parquet", str(tmp_path / "pq")]):
        assert cli(argv, klass=LINKS) == "clean"
        assert error() == f"kernelscope: error: {cells / 'c2'}: a link inside the campaign: kernelscope follows no " \
                          "link in a campaign", error()
    assert cli(import_ncu(root, REPORT, cell="c2"), klass=LINKS) == "clean"
    (cells / "c2").unlink()
    (cells / "c2").mkdir()
    (cells / "c2" / "ncu_kernels.json").symlink_to(other / "x" / "cells" / "c1" / "ncu_kernels.json")
    assert cli(check, klass=LINKS) == "clean" and "ncu_kernels.json: a link inside the campaign" in error()
    shutil.rmtree(cells / "c2")
    config = root / "x" / "config.yaml"
    config.rename(tmp_path / "config.yaml")
    config.symlink_to(tmp_path / "config.yaml")
    assert cli(check, klass=LINKS) == "clean" and "config.yaml: a link inside the campaign" in error()
    config.unlink()
    (tmp_path / "config.yaml").rename(config)
    (root / "x" / ".lock").unlink()
    (root / "x" / ".lock").symlink_to(tmp_path / "made-by-the-lock")
    assert cli(import_ncu(root, REPORT), klass=LINKS) == "clean" and ".lock: a link inside" in error()
    assert not (tmp_path / "made-by-the-lock").exists()
    (root / "x" / ".lock").unlink()
    shutil.move(cells, tmp_path / "cells-elsewhere")
    cells.symlink_to(tmp_path / "cells-elsewhere")
    assert cli(import_ncu(root, REPORT, cell="c3"), klass=LINKS) == "clean" and "cells: a link inside" in error()
    assert sorted(p.name for p in (tmp_path / "cells-elsewhere").iterdir()) == ["c1"]  # nothing staged there


def test_a_symlink_loop_in_a_report_folder(tmp_path: Path) -> None:
    """A loop was a RuntimeError traceback (Path.resolve) in every verb that reads a folder."""
    d = tmp_path / "reports"
    d.mkdir()
    shutil.copy(REPORT, d / "a.ncu-rep")
    (d / "loop.ncu-rep").symlink_to("loop.ncu-rep")
    b = bundle_copy(tmp_path)
    (b / "ncu-profiles" / "loop.ncu-rep").symlink_to("loop.ncu-rep")
    manifest_reports(b, ["ncu-profiles/loop.ncu-rep"])
    for path in (d, b, d / "loop.ncu-rep"):
        for argv in (["analyze", str(path)], ["diff", str(path), str(REPORT), "--hw", "h200-sxm"],
                     ["join", "--ncu", str(path), "--hw", "h200-sxm"], import_ncu(tmp_path / "camp", path),
                     ["report", str(path), "--out", str(tmp_path / "r.html")]):
            assert cli(argv, klass=LINKS) == "clean", argv
            assert "loop.ncu-rep: a symbolic link loop" in error(), error()
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("listed", ["ncu-profiles/a\x00.ncu-rep", "\x00", "", "  "])
def test_a_nul_or_empty_manifest_path(tmp_path: Path, listed: str) -> None:
    b = bundle_copy(tmp_path)
    manifest_reports(b, [listed])
    for argv in (["analyze", str(b)], import_ncu(tmp_path / "camp", b)):
        assert cli(argv, klass=LINKS) == "clean"
        assert f"lists {listed!r}: not a usable path (empty, or a NUL byte)" in error(), error()


# -- names read back from a cluster -------------------------------------------------------------------
@pytest.fixture
def evil_kubeconfig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, list[int]]]:
    """`--kubeconfig=evil.kubeconfig`, a name the cluster may hand back, and the connections made
    to the server that file names (ours, counting them); the run's working directory holds it."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    server.settimeout(0.2)
    seen = [0]
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            seen[0] += 1
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    monkeypatch.chdir(tmp_path)
    Path("evil.kubeconfig").write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "e",
        "clusters": [{"name": "e", "cluster": {"server": f"https://127.0.0.1:{server.getsockname()[1]}",
                                               "insecure-skip-tls-verify": True}}],
        "users": [{"name": "e", "user": {"token": "x"}}],
        "contexts": [{"name": "e", "context": {"cluster": "e", "user": "e"}}]}))
    yield "--kubeconfig=evil.kubeconfig", seen
    stop.set()
    thread.join()
    server.close()


def inspect_and_dry_run(name: str) -> list[str]:
    """`k8s inspect` and `k8s capture --dry-run` of a deployment: the errors they end with."""
    errors = []
    for argv in (["k8s", "inspect", "-n", NS, f"deploy/{name}"],
                 ["k8s", "capture", "-n", NS, f"deploy/{name}", "--kernel", "regex:nvjet", "--out", "/tmp/never",
                  "--dry-run"]):
        assert cli(argv, klass=NAMES) == "clean"
        errors.append(error())
    return errors


@pytest.mark.usefixtures("cluster")
def test_a_hostile_node_name_never_reaches_kubectl(evil_kubeconfig: tuple[str, list[int]]) -> None:
    """A node named `--kubeconfig=evil.kubeconfig` made `k8s inspect` run kubectl with that file
    (55 connections to the server it names); now: one line, no connection."""
    hostile, seen = evil_kubeconfig
    name = deploy(toy("hostile-node", NS))
    pod = kubectl("-n", NS, "get", "pods", "-l", f"app={name}", "-o", "jsonpath={.items[0].metadata.name}")
    kubectl("-n", NS, "patch", "pod", pod, "--type=merge", "-p", json.dumps({"spec": {"nodeName": hostile}}))
    assert kubectl("-n", NS, "get", "pod", pod, "-o", "jsonpath={.spec.nodeName}") == hostile  # the server took it
    for line in inspect_and_dry_run(name):
        assert line == f"kernelscope: error: node {hostile!r} (as the cluster returned it; refusing to pass it to " \
                       "kubectl): not a valid Kubernetes name (lower-case letters, digits and '-', dots between, " \
                       "starting and ending with a letter or digit, at most 253)", line
    time.sleep(0.5)
    assert seen[0] == 0
    kubectl("-n", NS, "delete", "deploy", name, "--wait=true")


@pytest.mark.usefixtures("cluster")
def test_a_hostile_pod_name_never_reaches_kubectl(evil_kubeconfig: tuple[str, list[int]]) -> None:
    hostile, seen = evil_kubeconfig
    name = deploy(toy("hostile-pod", NS))
    template = json.loads(kubectl("-n", NS, "get", "deploy", name, "-o", "json"))["spec"]["template"]
    apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": hostile, "namespace": NS,
                                                           "labels": template["metadata"]["labels"]},
           "spec": {"containers": [{"name": "server", "image": "busybox", "command": ["sleep", "3600"]}]}})
    deadline = time.monotonic() + 20
    while "Running" not in kubectl("-n", NS, "get", "pods", "-l", f"app={name}", "-o",
                                   "jsonpath={.items[0].status.phase}"):
        assert time.monotonic() < deadline
        time.sleep(0.3)
    for line in inspect_and_dry_run(name):
        assert line.startswith(f"kernelscope: error: pod {hostile!r} (as the cluster returned it"), line
    time.sleep(0.5)
    assert seen[0] == 0
    kubectl("-n", NS, "delete", "deploy", name, "--wait=true")
    kubectl("-n", NS, "delete", "pods", "-l", f"app={name}", "--wait=true")


@pytest.mark.parametrize(("where", "value", "said"), [
    ("container", "--kubeconfig=evil.kubeconfig", "container '--kubeconfig=evil.kubeconfig' (as the cluster"),
    ("container", "Server", "container 'Server' (as the cluster"),
    ("selector", "x,evil!=1", "label 'app'='x,evil!=1' (as the cluster returned it): not a valid Kubernetes label"),
    ("selector", "-n", "label 'app'='-n' (as the cluster"),
])
@pytest.mark.usefixtures("cluster")
def test_names_in_a_template_are_checked(where: str, value: str, said: str) -> None:
    """No pod needed: the template's own names are checked before any argv holds them."""
    doc: dict[str, Any] = toy(f"tpl-{where}", NS)
    doc["spec"]["replicas"] = 0
    if where == "container":
        doc["spec"]["template"]["spec"]["containers"][1]["name"] = value
    else:
        doc["spec"]["selector"]["matchLabels"]["app"] = value
        doc["spec"]["template"]["metadata"]["labels"]["app"] = value
    apply(doc)
    for line in inspect_and_dry_run(doc["metadata"]["name"]):
        assert said in line, line
    kubectl("-n", NS, "delete", "deploy", doc["metadata"]["name"], "--wait=true")


@pytest.mark.usefixtures("cluster")
def test_cleanup_checks_every_name_before_it_deletes() -> None:
    hostile = "--all=true"
    apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": hostile, "namespace": NS, "labels": {
        "kernelscope.dev/owner": "kernelscope"}}, "spec": {"containers": [{"name": "c", "image": "busybox",
                                                                          "command": ["sleep", "3600"]}]}})
    before = kubectl("-n", NS, "get", "pods", "-o", "name")
    assert cli(["k8s", "cleanup", "-n", NS], klass=NAMES) == "clean"
    assert error().startswith(f"kernelscope: error: pod {hostile!r} (as the cluster returned it"), error()
    assert kubectl("-n", NS, "get", "pods", "-o", "name") == before  # nothing deleted
    subprocess.run(["kubectl", "-n", NS, "delete", "pods", "-l", "kernelscope.dev/owner=kernelscope", "--wait=true"],
                   check=True, capture_output=True)
