"""A bare `.ncu-rep` carries its own context into every output (issue 22 item 4): what the report
records of its capture (ingest/session.py, ncu_rep.first_launch), read from the real fixtures and
the sets archive, never invented."""

from __future__ import annotations

import csv
import io
import json
import re
import struct
from pathlib import Path

import pytest

from kernelscope import app
from kernelscope.cli import main
from kernelscope.ingest import report_manifest
from kernelscope.ingest.detect import blocks, message_fields
from kernelscope.ncu import cmdline

GEMM_BASIC_TARGET = ("python3", "/work/main/tests/fixtures/make/workloads.py", "gemm_bf16")
# the set each capture of the sets archive was made with (tests/fixtures/README.md), as its context names it
SET_OF = {"basic": "basic", "default": "basic", "detailed": "detailed", "full": "full", "ncu_roofline": "ncu-roofline",
          "ks_roofline": "roofline", "ks_stalls": "roofline+stalls", "ks_sol": "roofline+sol", "sol": "custom",
          "ramp": "custom"}


def test_flag_tables_are_ncus_own(fx: Path) -> None:
    """cmdline's options without a value and short names are those ncu 2025.3.1's --help lists."""
    flags, short = set(), {}
    for line in (fx / "ncu-output" / "ncu-2025.3.1-help.txt").read_text().splitlines():
        m = re.match(r"^  (?:(-\w) \[ )?(--[a-z0-9-]+)(?: \])?( arg)?", line)
        if m:
            if m.group(1):
                short[m.group(1)] = m.group(2)
            if not m.group(3):
                flags.add(m.group(2))
    assert flags == cmdline.FLAGS and short == cmdline.SHORT


def test_a_bare_report_records_its_capture(fx: Path) -> None:
    m = report_manifest(fx / "gemm_basic.ncu-rep")
    assert m is not None and m.ncu is not None
    assert m.ncu.version == "2025.3.1.0"
    assert m.ncu.path == "/opt/nvidia/nsight-compute/2025.3.1/target/linux-desktop-glibc_2_11_3-x64/ncu"
    assert (m.gpu.name, m.gpu.driver_version, m.gpu.driver_cuda_version) == ("NVIDIA H200", None, "13.0")
    assert m.metric_set == "basic"
    assert m.sections == ("LaunchStats", "Occupancy", "SpeedOfLight", "WorkloadDistribution")
    assert m.clock_control == "none"
    assert m.clocks_hz == {"sm_max_hz": 1_980_000_000.0, "memory_max_hz": 3_201_000_000.0}
    assert m.ncu_command[1:] == ("--clock-control", "none", "-f", "-o", "/tmp/fx/gemm_basic", "--set", "basic",
                                 "--kernel-name", "regex:nvjet|gemm|gemv|cutlass|xmma", "--launch-skip", "2",
                                 "--launch-count", "1")
    assert m.target == GEMM_BASIC_TARGET
    assert (m.processes, m.host, m.created_at) == (("pid 1399 /usr/bin/python3.12",), "vm", "2026-11-30T03:13:25+00:00")
    gz = report_manifest(fx / "softmax.ncu-rep.gz")  # read through the expanded copy
    assert gz is not None and gz.target[-1] == "softmax" and gz.metric_set == "custom" and "section0" in gz.sections
    assert report_manifest(fx / "gemm_bf16-raw.csv") is None  # an export records no capture


def test_every_set_is_named_right(sets_dir: Path) -> None:
    reports = sorted(sets_dir.glob("*.ncu-rep"))
    assert len(reports) == 28
    for path in reports:
        m = report_manifest(path)
        assert m is not None and m.metric_set == SET_OF[path.stem.rsplit("-", 1)[0]], path.name
        given = cmdline.parse(" ".join(m.ncu_command)).value("--set")  # what ncu was told, where it was told one
        assert given is None or {"roofline": "ncu-roofline"}.get(given, given) == m.metric_set
        assert m.ncu is not None and m.ncu.version == "2025.3.1.0" and m.clock_control == "none"


def _with_command_line(src: Path, dst: Path, line: str) -> None:
    """A copy of a real report whose recorded ncu command line is `line`: the one block header that
    holds ProfilerCmdline is written again with it (both are protobuf: a varint or a length-prefixed
    field each)."""
    def field(number: int, value: int | bytes) -> bytes:
        if isinstance(value, int):
            return _varint(number << 3) + _varint(value)
        return _varint(number << 3 | 2) + _varint(len(value)) + value

    data = src.read_bytes()
    with src.open("rb") as fh:
        ends = [0, 8 + struct.unpack("<I", data[4:8])[0]] + [b.end for b in blocks(fh, str(src))]
    for start, end in zip(ends[1:], ends[2:], strict=False):
        header = data[start + 4:start + 4 + struct.unpack("<I", data[start:start + 4])[0]]
        session = dict(message_fields(header)).get(3)
        if isinstance(session, bytes) and 11 in dict(message_fields(session)):
            fields = [(n, field(11, line.encode()) if n == 3 else v) for n, v in message_fields(header)]
            new = b"".join(field(n, v) for n, v in fields)
            dst.write_bytes(data[:start] + struct.pack("<I", len(new)) + new + data[start + 4 + len(header):end]
                            + data[end:])
            return
    raise AssertionError("no command line in the report")


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append(n & 0x7F | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def test_the_command_line_is_redacted(fx: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A token on the recorded command line is shown by its name only, in every output."""
    report = tmp_path / "served.ncu-rep"
    _with_command_line(fx / "gemm_basic.ncu-rep", report,
                       "/usr/local/bin/ncu --clock-control base --set basic -o out "
                       "env HF_TOKEN=hf_abcdefghijklmnopqrstu python3 serve.py --api-key s3cr3t-value --port 8000")
    m = report_manifest(report)
    assert m is not None
    assert m.ncu_command == ("/usr/local/bin/ncu", "--clock-control", "base", "--set", "basic", "-o", "out")
    assert m.target == ("env", "HF_TOKEN=<redacted>", "python3", "serve.py", "--api-key", "<redacted>",
                        "--port", "8000")
    assert m.clock_control == "base"
    out = tmp_path / "out"
    assert main(["analyze", str(report)]) == 0
    table = capsys.readouterr().out.replace("\n  ", " ")
    assert "ran env 'HF_TOKEN=<redacted>' python3 serve.py --api-key '<redacted>' --port 8000" in table
    assert main(["analyze", str(report), "--out-dir", str(out)]) == 0
    assert main(["report", str(report), "--out", str(tmp_path / "r.html")]) == 0
    shown = table + "".join(p.read_text() for p in (out / "kernels.json", out / "kernels.csv", tmp_path / "r.html"))
    assert "hf_abc" not in shown and "s3cr3t" not in shown
    assert '"HF_TOKEN=<redacted>","python3","serve.py","--api-key","<redacted>"' in shown  # kernels.json
    assert "HF_TOKEN=&lt;redacted&gt;" in shown  # the HTML header


def test_the_context_reaches_every_output(fx: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = str(fx / "gemm_basic.ncu-rep")
    capture = ("capture: ncu 2025.3.1.0, set basic, clock-control none, "
               "ran python3 /work/main/tests/fixtures/make/workloads.py gemm_bf16")
    assert main(["analyze", report]) == 0
    assert capture in capsys.readouterr().out.replace("\n  ", " ")  # the table's header, wrapped to the terminal
    assert main(["analyze", report, "--format", "markdown"]) == 0
    assert capture.replace("_", "\\_") in capsys.readouterr().out
    assert main(["analyze", report, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    recorded = doc["context"]["reports"][report]
    assert (recorded["ncu"]["version"], recorded["metric_set"], recorded["host"]) == ("2025.3.1.0", "basic", "vm")
    assert doc["context"]["bundles"] == {}
    assert doc["kernels"][0]["capture"] == {"ncu_version": "2025.3.1.0", "metric_set": "basic", "clock_control": "none",
                                           "graph_profiling": None, "multiplexed": False}
    assert (doc["kernels"][0]["grid"], doc["kernels"][0]["block"]) == ("(2, 66, 1)", "(384, 1, 1)")
    assert main(["analyze", report, str(fx / "gemm_bf16-raw.csv"), "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [(r["capture.ncu_version"], r["capture.metric_set"], r["capture.clock_control"]) for r in rows] == [
        ("2025.3.1.0", "basic", "none"), ("", "", "")]  # the CSV export records no capture
    an = app.analyze(app.AnalyzeRequest((Path(report),)))
    assert app.figure_title(an) == "NVIDIA H200 · model unknown · set basic · ncu 2025.3.1.0"  # roofline, HTML title
    page = tmp_path / "r.html"
    assert main(["report", report, "--out", str(page)]) == 0
    html = page.read_text()
    assert "<h1>NVIDIA H200 · model unknown · set basic · ncu 2025.3.1.0</h1>" in html
    assert ("ncu 2025.3.1.0, set basic (sections LaunchStats, Occupancy, SpeedOfLight, WorkloadDistribution), "
            "clock-control none, device max clocks SM 1,980 MHz / memory 3,201 MHz, profiled pid 1399 "
            "/usr/bin/python3.12 on host vm, written 2026-11-30T03:13:25+00:00") in html
    assert "NVIDIA H200 (CUDA 13.0)" in html and "python3 /work/main/tests/fixtures/make/workloads.py gemm_bf16" in html


def test_a_csv_export_says_not_recorded(fx: Path) -> None:
    an = app.analyze(app.AnalyzeRequest((fx / "gemm_bf16-raw.csv",)))
    assert app.figure_title(an) == "NVIDIA H200 · model unknown · set not recorded · ncu not recorded"
    assert an.headline().endswith("capture: gemm_bf16-raw.csv: not recorded")
