"""Hostile exports, each made from a real one: inputs neither dropped nor doubled, numbers never
invented, one error line instead of a traceback."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

import kernelscope
from hostile import LAST_ERROR, LAST_OUTPUT, api, cli
from kernelscope.errors import KernelscopeError

NUMBERS = "exports: numbers as ncu writes them, units, impossible values"
DROPPED = "exports: inputs neither dropped nor doubled"
ONE_LINE = "exports: OSError, malformed objects, API misuse as one error"


def refused(argv: list[str], klass: str) -> str:
    """The one error line a CLI call ends with (exit 2), counted in the hostile tally by class."""
    assert cli(argv, klass) == "clean", LAST_OUTPUT[0]
    return next(line for line in LAST_ERROR[0].splitlines() if line.startswith("kernelscope: error:"))


def _with_duration(fx: Path, tmp_path: Path, text: str, unit: str = "us") -> Path:
    """The real decode GEMM raw export with its duration field replaced by `text` in `unit`."""
    rows = list(csv.reader((fx / "decode_gemm-raw.csv").open(newline="")))
    at = rows[0].index("gpu__time_duration.sum")
    assert rows[1][at] == "us"
    rows[1][at], rows[2][at] = unit, text
    out = tmp_path / "raw.csv"
    with out.open("w", newline="") as fh:
        csv.writer(fh, quoting=csv.QUOTE_ALL).writerows(rows)
    return out


@pytest.mark.parametrize("text", ["35,264000", "35,26", "35_264", "1,23,456", "٣٥.٢٦٤", "３５.２６", "35.2\u0663"])
def test_a_number_ncu_does_not_write_is_refused(fx: Path, tmp_path: Path, text: str) -> None:
    """A decimal comma or underscores are another locale's or language's number, never read as ncu's
    thousands separators (35,264000 µs was read as 35 s, 35,26 as 3,526); another script's digits
    (Arabic-Indic, fullwidth), which float() reads, are no ncu number either."""
    err = refused(["analyze", str(_with_duration(fx, tmp_path, text))], NUMBERS)
    assert err.count("\n") == 0 and "line 3:" in err and "is not a number as ncu writes it" in err


@pytest.mark.parametrize(("text", "ns"), [("35,264", 35_264_000.0), ("35.264", 35_264.0), ("1,035.5", 1_035_500.0)])
def test_numbers_ncu_writes_are_read(fx: Path, tmp_path: Path, text: str, ns: float) -> None:
    (a,), _ = kernelscope.analyze(str(_with_duration(fx, tmp_path, text)))  # the export's unit is us
    assert a.record.duration_ns == pytest.approx(ns)


def test_a_launch_id_that_is_no_number_is_refused(fx: Path, tmp_path: Path) -> None:
    """An ID of `abc` was read as launch 0 (two such rows, two launches 0); an empty one is ncu's none."""
    rows = list(csv.reader((fx / "decode_gemm-raw.csv").open(newline="")))
    rows[2][rows[0].index("ID")] = "abc"
    out = tmp_path / "raw.csv"
    with out.open("w", newline="") as fh:
        csv.writer(fh, quoting=csv.QUOTE_ALL).writerows(rows)
    err = refused(["analyze", str(out)], NUMBERS)
    assert err.count("\n") == 0 and "launch ID 'abc' is not a whole number" in err


def test_a_source_page_export_is_named_as_one(fx: Path) -> None:
    """ncu's --page source CSV (one row an instruction) was refused as a malformed row (line 3 has 66
    fields, the header has 3): the error now says what it is and which page to export."""
    err = refused(["analyze", str(fx / "softmax-sass.csv.gz")], NUMBERS)
    assert "an ncu source page (--page source" in err and "--page raw" in err


def test_a_gate_limit_in_another_scripts_digits_is_refused(fx: Path) -> None:
    err = refused(["diff", str(fx / "decode_gemm.ncu-rep"), str(fx / "decode_gemm.ncu-rep"), "--fail-on",
                   "duration_ns>+\u0665%"], NUMBERS)
    assert "expected FIGURE OP LIMIT UNIT" in err


def test_an_impossible_value_is_unmeasured_with_the_reason(fx: Path, tmp_path: Path) -> None:
    (a,), _ = kernelscope.analyze(str(_with_duration(fx, tmp_path, "-35.26")))
    assert a.record.duration_ns is None and "duration_ns" in a.record.unmeasured
    assert any("never negative" in n for n in a.record.notes) and a.pct_sol_memory is None


def test_a_time_without_its_unit_is_refused(fx: Path, tmp_path: Path) -> None:
    """Read as the base unit, 35.26 µs with its unit blanked became 35 ns; ncu never writes a time,
    size or rate without one."""
    err = refused(["analyze", str(_with_duration(fx, tmp_path, "35.26", unit=""))], NUMBERS)
    assert err.count("\n") == 0 and "line 3:" in err and "gpu__time_duration.sum (units row) has no unit" in err


def test_inputs_after_double_dash_are_inputs(fx: Path) -> None:
    err = refused(["analyze", str(fx / "gemm_bf16.ncu-rep"), "--", str(fx / "decode_gemm.ncu-rep"), "--format",
                   "json"], DROPPED)  # after `--`, "--format" is a file name: no such file
    assert "--format" in err
    argv = ["analyze", "--format", "json", str(fx / "gemm_bf16.ncu-rep"), "--", str(fx / "decode_gemm.ncu-rep")]
    assert cli(argv, DROPPED) == "handled"
    assert len(json.loads(LAST_OUTPUT[0])["kernels"]) == 2


def test_a_report_given_twice_is_refused_not_doubled(fx: Path) -> None:
    bundle = fx / "bundle_attn_causal"
    report = next(bundle.glob("*/*.ncu-rep"))
    for argv in ([str(fx / "gemm_bf16.ncu-rep")] * 2, [str(bundle), str(report)]):
        err = refused(["analyze", *argv], DROPPED)
        assert "its launches would count twice" in err and err.count("\n") == 0


def test_a_print_summary_csv_is_no_launches(tmp_path: Path) -> None:
    """ncu --print-summary per-kernel --csv: min/max/average per kernel, never 127 invented launches."""
    head = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
            "Grid Size", "Device", "CC", "Invocations", "Section Name", "Metric Name", "Metric Unit", "Minimum",
            "Maximum", "Average"]
    row = ["0", "1", "python3", "h", "k", "1", "7", "(1, 1, 1)", "(1, 1, 1)", "0", "9.0", "3", "GPU Speed Of Light "
           "Throughput", "Duration", "usecond", "1.0", "2.0", "1.5"]
    path = tmp_path / "summary.csv"
    with path.open("w", newline="") as fh:
        csv.writer(fh, quoting=csv.QUOTE_ALL).writerows([head, row, row])
    assert "an ncu --print-summary CSV" in refused(["analyze", str(path)], DROPPED)


def test_paths_the_system_refuses_are_one_line(fx: Path, tmp_path: Path) -> None:
    long = str(tmp_path / ("a" * 300))
    errs = [refused(["analyze", long], ONE_LINE),
            refused(["analyze", str(fx / "gemm_bf16.ncu-rep"), "--out-dir", long], ONE_LINE)]
    assert all(e.startswith("kernelscope: error: ") and "too long" in e for e in errs)
    with pytest.raises(KernelscopeError, match="cannot read"):
        kernelscope.analyze(long)


def test_kernel_internals_writes_no_bundle_until_every_one_is_made(fx: Path, tmp_path: Path) -> None:
    """B1's file is not rewritten when B2's cannot be: every bundle is read, judged and made first."""
    b1, b2 = tmp_path / "b1", tmp_path / "b2"
    shutil.copytree(fx / "bundle_attn_causal", b1)
    shutil.copytree(fx / "bundle_attn_causal", b2)
    (b2 / "inference_perfbench_v1.json").write_text("{not json")
    before = (b1 / "inference_perfbench_v1.json").read_bytes() if (b1 / "inference_perfbench_v1.json").exists() \
        else None
    refused(["bundle", "kernel-internals", str(b1), str(b2)], DROPPED)
    after = (b1 / "inference_perfbench_v1.json").read_bytes() if (b1 / "inference_perfbench_v1.json").exists() \
        else None
    assert after == before


@pytest.mark.parametrize(("argv", "secret"), [
    (["vllm", "serve", "m", "--hf-overrides", '{"hf_token": "hf-value-1234", "rope": 2}'], "hf-value-1234"),
    (["x", "--opts", "k=v,secret_key=supersecret9"], "supersecret9"),
    (["x", "--conn", "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=Zm9vYmFyYmF6=="], "Zm9vYmFyYmF6=="),
    (["curl", "https://h/w.bin?token=abcdef123&y=1"], "abcdef123"),
    (["curl", "https://b.s3.amazonaws.com/k?X-Amz-Signature=deadbeef99&X-Amz-Date=1"], "deadbeef99"),
    (["curl", "-u", "me:hunter22", "https://h"], "hunter22"),
    (["curl", "--user=me:hunter22", "https://h"], "hunter22"),
    (["mysql", "-phunter22", "-h", "db"], "hunter22"),
    (["x", "--key", "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg\n-----END PRIVATE KEY-----"], "MIIEvQIBADANBg"),
])
def test_secrets_in_every_shape_are_masked(argv: list[str], secret: str) -> None:
    from kernelscope import redact

    shown = " ".join(redact.argv(argv))
    assert secret not in shown and redact.MASK in shown
    assert secret not in redact.text(f"log: {' '.join(argv)}", redact.secret_values(argv))


def test_secret_names_in_volume_attributes_are_masked() -> None:
    from kernelscope import redact

    pod = {"volumes": [{"name": "m", "csi": {"driver": "x", "volumeAttributes": {"secretKey": "s3cr3tval",
                                                                                    "bucket": "models"}}},
                       {"name": "f", "flexVolume": {"driver": "y", "options": {"password": "pa55word"}}}]}
    shown = json.dumps(redact.kube(pod))
    assert "s3cr3tval" not in shown and "pa55word" not in shown and "models" in shown


def test_ordinary_flags_are_not_masked() -> None:
    from kernelscope import redact

    argv = ["gcc", "-pthread", "-pedantic", "-p", "8000", "--kv-cache-dtype", "fp8", "--opts", "a=1,b=2"]
    assert redact.argv(argv) == argv


@pytest.mark.parametrize(("flag", "text", "problem"), [
    ("--nsys", '"Total Time (ns)","Name"\n"-5000","k"\n', "line 2: Total Time (ns) is -5000, and it is never negative"),
    ("--zymtrace", "name,share %\nk,450\n", "line 2: share % is 450 %, over the whole"),
    ("--zymtrace", "name,share %\nk,60\nj,60\n", "the shares add up to 120.0 %, over the whole"),
    ("--zymtrace", "name,share %\nk,35_264\n", "line 2: share %: '35_264' is not a number as ncu writes it"),
])
def test_an_impossible_profile_figure_is_refused(fx: Path, tmp_path: Path, flag: str, text: str, problem: str) -> None:
    """A negative nsys total or a share over the whole was joined as measured (a negative time %)."""
    profile = tmp_path / "profile.csv"
    profile.write_text(text)
    err = refused(["join", str(fx / "decode_gemm.ncu-rep"), flag, str(profile)], NUMBERS)
    assert err.count("\n") == 0 and str(profile) in err and problem in err


def test_a_csv_that_changes_while_its_parts_are_read_is_refused(fx: Path, tmp_path: Path) -> None:
    """`analyze --jobs 2` on an export cut while it was read ended with exit 0 and 1,482 of 2,000
    launches: parts past the cut read no bytes, with no error."""
    from kernelscope.errors import InputError
    from kernelscope.ingest import parts
    path = tmp_path / "raw.csv"
    lines = (fx / "floor-raw.csv").read_bytes().splitlines(keepends=True)
    kept = [line for line in lines if not line.startswith(b"==")]  # with ncu's log lines, it is read whole
    path.write_bytes(b"".join(kept))
    split = parts.split(path, 16_384, jobs=2)
    assert isinstance(split, parts.CsvSplit) and split.parts >= 3
    assert sum(1 for i in range(split.parts) for _ in split.read_part(i)) == len(kept) - 2
    with path.open("r+b") as fh:
        fh.truncate(split.bounds[1] + 100)  # mid-line, in part 1
    for i in (0, 1, 2):
        with pytest.raises(InputError, match=r"changed while it was read \(\d+ bytes when it was split, \d+ now\)"):
            list(split.read_part(i))
    with pytest.raises(InputError, match="cut short"):  # the whole-file read's own words
        list(split.read_from(1, 0, set()))


@pytest.mark.parametrize(("field", "value", "problem"), [
    ("launch_id", 2**64, "items[0].record.launch_id: expected int (int64), got 18446744073709551616"),
    ("duration_ns", "abc", "items[0].record.duration_ns: expected a number, got 'abc'"),
    ("name", None, "items[0].record.name: expected str, got None"),
])
def test_records_changed_by_the_caller_are_refused_by_field(fx: Path, field: str, value: Any,
                                                            problem: str) -> None:
    """`dataclasses.replace` on a record, then to_dataframe: an OverflowError or TypeError from pandas."""
    import dataclasses
    (a,), _ = kernelscope.analyze(str(fx / "decode_gemm.ncu-rep"))
    changed = dataclasses.replace(a, record=dataclasses.replace(a.record, **{field: value}))
    for per in ("launch", "kernel"):
        assert api(lambda per=per: kernelscope.to_dataframe([changed], per=per), ONE_LINE) == "clean"
        with pytest.raises(KernelscopeError, match=re.escape(f"to_dataframe: {problem}")):
            kernelscope.to_dataframe([changed], per=per)


def test_a_pathlike_that_returns_no_path_is_refused() -> None:
    class Odd:
        def __fspath__(self) -> int:
            return 5

    os.PathLike.register(Odd)
    for call in (kernelscope.load, kernelscope.analyze):
        with pytest.raises(KernelscopeError, match="inputs: expected a path, got Odd"):
            call(Odd())  # type: ignore[arg-type]
