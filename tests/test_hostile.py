"""Hostile input, class by class (issue 10): corrupt and oversized files, special files, paths and
links out of a bundle, wrongly typed documents, non-finite numbers, hostile YAML, bad option values
and the Python API given the wrong types. Every input must end handled (valid output) or as one
clean error; hostile.py counts them and conftest.py prints the tally."""

from __future__ import annotations

import csv
import errno
import gzip
import io
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kernelscope
from hostile import LAST_ERROR, api, cli
from kernelscope import files
from kernelscope.ceilings import load as load_ceilings
from kernelscope.cli import main
from kernelscope.errors import InputError
from kernelscope.ingest import gunzip_file
from kernelscope.ingest.csv_pages import records

FX = Path(__file__).parent / "fixtures"
RAW = (FX / "decode_gemm-raw.csv").read_text()
DETAILS = (FX / "decode_gemm-details.csv").read_text()
FUZZ = settings(max_examples=60, deadline=None, derandomize=True,  # the same examples on every CI run
                suppress_health_check=[HealthCheck.function_scoped_fixture])
# JSON-like values of every type a hand-edited document could hold where another was expected
ANY_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers(-10**30, 10**30) | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8)


def verbs(path: Path | str, root: Path) -> list[list[str]]:
    """Every verb that reads an input, pointed at `path`."""
    p = str(path)
    return [["analyze", p, "--format", "json", "--hw", "h200-sxm"],
            ["campaign", "import-ncu", "--root", str(root), "--campaign", "x", "--cell-id", "c1", "--bundle", p,
             "--hw", "h200-sxm"],
            ["diff", p, str(FX / "decode_gemm.ncu-rep"), "--hw", "h200-sxm", "--allow-mismatch"],
            ["join", "--ncu", p, "--hw", "h200-sxm", "--format", "csv"]]


def raw_rows() -> list[list[str]]:
    return list(csv.reader(io.StringIO(RAW)))


def raw_with(values: dict[str, str], name: str | None = None) -> str:
    header, units, row = raw_rows()
    row = [values.get(h, v) for h, v in zip(header, row, strict=True)]
    if name is not None:
        row[header.index("Kernel Name")] = name
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows([header, units, row])
    return out.getvalue()


# -- files: corrupt, oversized, special ------------------------------------------------------------
def hostile_files(d: Path) -> dict[str, Path]:
    g = gzip.compress(RAW.encode())
    lines = RAW.splitlines()
    made = {
        "deflate-corrupt.csv.gz": g[:20] + bytes(b ^ 0x55 for b in g[20:80]) + g[80:],
        "gzip-truncated.csv.gz": g[: len(g) // 2],
        "gzip-trailing-garbage.csv.gz": g + b"garbage",
        "gzip-in-gzip.gz": gzip.compress(g),
        "gzip-empty.gz": gzip.compress(b""),
        "field-over-128k.csv": "\n".join(lines[:2] + [lines[2].replace("nvjet", "nvjet" + "x" * 200_000, 1)]),
        "ragged-raw.csv": "\n".join(lines[:2] + [lines[2] + ',"extra"']),
        "header-only.csv": lines[0],
        "short-details.csv": "\n".join([DETAILS.splitlines()[0]] + [",".join(x.split(",")[:6])
                                                                    for x in DETAILS.splitlines()[1:4]]),
        "details-without-id.csv": '"Kernel Name","Section Name","Metric Name","Metric Unit","Metric Value"\n'
                                  '"k","a","b","c","1"\n',
        "non-utf8.csv": RAW.encode()[:80] + b"\xff\xfe" + RAW.encode()[80:],
        "nul-bytes.csv": RAW.replace("nvjet", "nv\x00jet", 1),
        "unbalanced-quote.csv": RAW.replace('"nvjet', '"nv"jet', 1) + '"open\n',
        "huge-numbers.csv": raw_with({"gpu__time_duration.sum": "1e-300", "dram__bytes_read.sum": "1e308",
                                      "dram__bytes_write.sum": "1e308"}),
        "tiny-duration.csv": raw_with({"gpu__time_duration.sum": "1e-300"}),
        "non-finite.csv": raw_with({"gpu__time_duration.sum": "nan", "dram__bytes_read.sum": "inf",
                                    "dram__bytes_write.sum": "-inf", "sm__cycles_elapsed.avg.per_second": "1e400"}),
        "ncu-rep-garbage.ncu-rep": b"NVR\x00" + os.urandom(200),
        "ncu-rep-cut.ncu-rep": (FX / "decode_gemm.ncu-rep").read_bytes()[:-300],
        "empty.ncu-rep": b"",
        "binary.bin": os.urandom(300),
    }
    out = {}
    for name, data in made.items():
        p = d / name
        (p.write_bytes if isinstance(data, bytes) else p.write_text)(data)
        out[name] = p
    os.mkfifo(d / "fifo")
    out["fifo"] = d / "fifo"
    out["/dev/zero"] = Path("/dev/zero")
    out["/dev/null"] = Path("/dev/null")
    return out


def test_hostile_files_end_cleanly_in_every_verb(tmp_path: Path) -> None:
    outcomes = {}
    for name, path in hostile_files(tmp_path).items():
        for argv in verbs(path, tmp_path / "camp"):
            outcomes[name, argv[0]] = cli(argv)
    # the overflowing inputs are read: the figures they break are null (with a note), never NaN/Infinity
    assert outcomes["huge-numbers.csv", "analyze"] == outcomes["tiny-duration.csv", "analyze"] == "handled"
    assert all(v == "clean" for (n, _), v in outcomes.items()
               if n not in ("huge-numbers.csv", "tiny-duration.csv", "non-finite.csv", "nul-bytes.csv"))
    assert not list((tmp_path / "camp").glob("x/cells/.*"))  # no stage left by any failed import


def test_overflow_becomes_null_with_a_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "t.csv"
    p.write_text(raw_with({"gpu__time_duration.sum": "1e-320"}))  # a subnormal: FLOP over it overflows
    assert main(["analyze", str(p), "--format", "json"]) == 0
    (k,) = json.loads(capsys.readouterr().out)["kernels"]
    assert k["duration_ns"] is None and k["achieved_tflops"] is None and k["achieved_dram_tbps"] is None
    assert "counters out of range (not 0, nor a magnitude from 1e-30 to 1e30), so not measured: " \
           "gpu__time_duration.sum" in k["notes"]
    p.write_text(raw_with({"gpu__time_duration.sum": "1e-29"}))  # in range, but FLOP over it is not
    assert main(["analyze", str(p), "--format", "json"]) == 0
    (k,) = json.loads(capsys.readouterr().out)["kernels"]
    assert k["duration_ns"] == pytest.approx(1e-26) and k["achieved_tflops"] is None and k["achieved_dram_tbps"] is None
    assert "out of range (not 0, nor a magnitude from 1e-30 to 1e30), so not measured: achieved_tflops, " \
           "achieved_dram_tbps" in k["notes"]
    assert {"achieved_tflops", "achieved_dram_tbps"} <= set(k["unmeasured"])


def test_gzip_bomb_stops_at_the_cap(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.gz"
    with gzip.open(bomb, "wb") as fh:
        for _ in range(64):
            fh.write(bytes(1 << 20))
    assert bomb.stat().st_size < 100_000
    with pytest.raises(InputError, match="expands past the 1,000,000-byte limit"):
        gunzip_file(bomb, tmp_path / "out", "bomb.gz", limit=1_000_000)
    assert (tmp_path / "out").stat().st_size <= 1_000_000 + (1 << 20)


@FUZZ
@given(cut=st.integers(0, 4000), flips=st.lists(st.tuples(st.integers(0, 4000), st.integers(1, 255)), max_size=4))
def test_fuzz_corrupt_gzip_and_reports(tmp_path: Path, cut: int, flips: list[tuple[int, int]]) -> None:
    for data in (gzip.compress(RAW.encode()), (FX / "tiny.ncu-rep.gz").read_bytes()):
        buf = bytearray(data[: max(cut, 10)] if cut < len(data) else data)
        for at, x in flips:
            buf[at % len(buf)] ^= x
        p = tmp_path / "f.gz"
        p.write_bytes(bytes(buf))
        api(lambda p=p: kernelscope.load(p))


# -- CSV: the fast line splitter agrees with the csv module, and hostile cells end cleanly -----------
FIELD = st.text(st.characters(codec="utf-8", exclude_characters="\r"), max_size=12)


@FUZZ
@given(rows=st.lists(st.lists(FIELD, min_size=1, max_size=5), min_size=1, max_size=5))
def test_fuzz_fast_csv_path_agrees_with_the_csv_module(rows: list[list[str]]) -> None:
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    expected = [r for r in csv.reader(io.StringIO(out.getvalue(), newline="")) if r]
    assert [fields for _, fields in records(io.StringIO(out.getvalue(), newline=""), "t")] == expected


NUMBERISH = st.sampled_from(["nan", "inf", "-inf", "1e308", "1e-308", "-1", "0", "1,000,000", "n/a", "", "1e400",
                             "0x10", "1_000", "  7 ", "\u0661", "--"]) | st.text(max_size=10)


@FUZZ
@given(values=st.dictionaries(st.sampled_from(raw_rows()[0][:60]), NUMBERISH, max_size=12),
       name=st.none() | st.text(max_size=40))
def test_fuzz_raw_csv_cells(tmp_path: Path, values: dict[str, str], name: str | None) -> None:
    p = tmp_path / "r.csv"
    p.write_text(raw_with(values, name))
    cli(["analyze", str(p), "--format", "json", "--hw", "h200-sxm"])


@FUZZ
@given(drop=st.integers(0, 6), extra=st.lists(FIELD, max_size=3), label=FIELD, value=NUMBERISH)
def test_fuzz_details_rows(tmp_path: Path, drop: int, extra: list[str], label: str, value: str) -> None:
    lines = DETAILS.splitlines()
    row = next(csv.reader([lines[3]]))
    row = row[: len(row) - drop] + extra
    row[min(13, len(row) - 1)] = label
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerow(row + [value])
    p = tmp_path / "d.csv"
    p.write_text("\n".join(lines[:3]) + "\n" + out.getvalue())
    cli(["analyze", str(p), "--format", "json", "--hw", "h200-sxm"])


# -- paths and links --------------------------------------------------------------------------------
def bundle_copy(tmp_path: Path) -> Path:
    b = tmp_path / "b"
    shutil.copytree(FX / "bundle_attn_causal", b)
    return b


def manifest_with(b: Path, **changes: Any) -> None:
    m = json.loads((b / "manifest.json").read_text())
    m.update(changes)
    (b / "manifest.json").write_text(json.dumps(m))


@pytest.mark.parametrize("listed", ["/etc/hostname", "../../etc/hostname", "ncu-profiles/../../x.ncu-rep",
                                    "ncu-profiles/link.ncu-rep"])
def test_bundle_reads_stay_inside(tmp_path: Path, listed: str) -> None:
    b = bundle_copy(tmp_path)
    (b / "ncu-profiles" / "link.ncu-rep").symlink_to("/etc/hostname")
    manifest_with(b, reports=[listed])
    for argv in verbs(b, tmp_path / "camp"):
        assert cli(argv) == "clean" and "outside the bundle" in LAST_ERROR[0], LAST_ERROR[0]


def test_links_out_of_a_plain_directory_or_bundle_are_refused(tmp_path: Path) -> None:
    d = tmp_path / "reports"
    d.mkdir()
    shutil.copy(FX / "fp8_gemm.ncu-rep", d / "a.ncu-rep")
    (d / "b.ncu-rep").symlink_to(FX / "gemm_bf16.ncu-rep")  # a real report, but outside
    assert api(lambda: kernelscope.load(d)) == "clean"
    b = bundle_copy(tmp_path)
    (b / "extra").symlink_to("/etc")
    assert cli(verbs(b, tmp_path / "camp")[1]) == "clean"  # import copies nothing from outside
    (b / "extra").unlink()
    (b / "manifest.json").rename(b / "real.json")
    (b / "manifest.json").symlink_to(b / "real.json")  # a link that stays inside, but by an absolute path
    assert cli(verbs(b, tmp_path / "camp")[1]) == "clean"
    assert not (tmp_path / "camp" / "x" / "cells" / "c1").exists()


# -- wrongly typed documents -------------------------------------------------------------------------
MANIFEST = json.loads((FX / "bundle_attn_causal" / "manifest.json").read_text())


@FUZZ
@given(key=st.sampled_from(sorted(MANIFEST)), value=ANY_VALUE)
def test_fuzz_manifest_fields(tmp_path: Path, key: str, value: Any) -> None:
    b = tmp_path / "b"
    if not b.exists():
        shutil.copytree(FX / "bundle_attn_causal", b)
    manifest_with(b, **{key: value})
    cli(["analyze", str(b), "--format", "json"])
    cli(["diff", str(b), str(b)])


CEILINGS = yaml.safe_load((FX / "measured-ceilings-h200.yaml").read_text())


@FUZZ
@given(path=st.lists(st.sampled_from(["devices", "h200-measured", "memory", "hbm", "tbps", "compute", "bf16",
                                      "tflops", "match", "name", "source"]), min_size=1, max_size=5),
       value=ANY_VALUE)
def test_fuzz_ceilings_fields(tmp_path: Path, path: list[str], value: Any) -> None:
    doc = json.loads(json.dumps(CEILINGS))
    node = doc
    for key in path[:-1]:
        node = node.setdefault(key, {}) if isinstance(node, dict) else {}
    if isinstance(node, dict):
        node[path[-1]] = value
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump(doc))
    api(lambda: load_ceilings(p))
    cli(["analyze", str(FX / "gemm_bf16.ncu-rep"), "--format", "json", "--ceilings", str(p)])


def hostile_yaml(d: Path) -> dict[str, Path]:
    laughs = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True))
    docs: dict[str, str | bytes] = {
        "billion-laughs.yaml": laughs, "deep.yaml": "[" * 50_000, "deep-map.yaml": "a: " * 20_000 + "1",
        "python-tag.yaml": "devices: !!python/object/apply:os.system ['true']", "non-utf8.yaml": b"devices: \xff\xfe",
        "list.yaml": "- 1\n- 2\n", "scalar.yaml": "42", "empty.yaml": "", "tab.yaml": "devices:\n\t- x",
        "huge.yaml": "x: " + "y" * (2 << 20),
    }
    out = {}
    for name, text in docs.items():
        out[name] = d / name
        (out[name].write_bytes if isinstance(text, bytes) else out[name].write_text)(text)
    return out


def test_yaml_composed_by_libyaml_is_built_only_within_the_alias_bound(tmp_path: Path) -> None:
    """A user's YAML is composed by libyaml, and built only when its aliases expand within the bound:
    the same data as the pure-Python reader gives (the ceilings table, anchors and all), the same
    refusal of a billion laughs."""
    text = (Path(kernelscope.__file__).parent / "ceilings" / "sol-ceilings.yaml").read_text()
    assert "*" in text and files.parse_yaml(text, "t", "table") == yaml.load(text, Loader=files._plain_yaml_loader())
    laughs = hostile_yaml(tmp_path)["billion-laughs.yaml"]
    with pytest.raises(InputError, match=r"at line 6 \(YAML aliases expand past 100,000 nodes\)"):
        files.parse_yaml(laughs.read_text(), laughs, "config")


def test_hostile_yaml_as_ceilings_and_campaign_config(tmp_path: Path) -> None:
    cli(["campaign", "import-ncu", "--root", str(tmp_path), "--campaign", "x", "--cell-id", "c1", "--bundle",
         str(FX / "gemm_bf16.ncu-rep")])
    config = tmp_path / "x" / "config.yaml"
    for name, p in hostile_yaml(tmp_path).items():
        assert cli(["analyze", str(FX / "gemm_bf16.ncu-rep"), "--ceilings", str(p)]) == "clean", name
        assert cli(["report", str(FX / "gemm_bf16.ncu-rep"), "--out", str(tmp_path / "r.html"),
                    "--campaign-config", str(p)]) in ("clean", "handled"), name
        shutil.copy(p, config)
        for verb in ("check", "render", "export"):
            extra = ["--parquet", str(tmp_path / "pq")] if verb == "export" else []
            assert cli(["campaign", verb, "--root", str(tmp_path), "--campaign", "x", *extra]) in ("clean", "handled")


CONFIG_KEYS = st.sampled_from(["context", "comparisons", "claims", "krhpa", "focus", "slug"])


@FUZZ
@given(key=CONFIG_KEYS, value=ANY_VALUE)
def test_fuzz_campaign_config_fields(tmp_path: Path, key: str, value: Any) -> None:
    home = tmp_path / "x"
    if not (home / "cells" / "c1").exists():
        cli(["campaign", "import-ncu", "--root", str(tmp_path), "--campaign", "x", "--cell-id", "c1", "--bundle",
             str(FX / "fp8_gemm.ncu-rep")])
    (home / "config.yaml").write_text(yaml.safe_dump({key: value}))
    for verb in ("check", "export", "render"):
        extra = ["--parquet", str(tmp_path / "pq")] if verb == "export" else []
        cli(["campaign", verb, "--root", str(tmp_path), "--campaign", "x", *extra])


CELL_KEYS = ["name", "duration_ns", "flops", "bound", "next_levers", "ncu_rules", "warp_stalls", "category",
             "pct_sol", "unmeasured", "launch_id", "analytic", "pct_of_achievable", "tensor_path", "limiters"]


@FUZZ
@given(key=st.sampled_from(CELL_KEYS + ["kernels", "captured_sources", "hw_key"]), value=ANY_VALUE)
def test_fuzz_campaign_cell_fields(tmp_path: Path, key: str, value: Any) -> None:
    cell = tmp_path / "x" / "cells" / "c1" / "ncu_kernels.json"
    if not cell.exists():
        cli(["campaign", "import-ncu", "--root", str(tmp_path), "--campaign", "x", "--cell-id", "c1", "--bundle",
             str(FX / "gemm_bf16.ncu-rep")])
        (tmp_path / "pristine.json").write_bytes(cell.read_bytes())
    doc = json.loads((tmp_path / "pristine.json").read_text())
    if key in CELL_KEYS:
        doc["kernels"][0][key] = value
    else:
        doc[key] = value
    cell.write_text(json.dumps(doc))
    for verb in ("check", "export", "render"):
        extra = ["--parquet", str(tmp_path / "pq")] if verb == "export" else []
        cli(["campaign", verb, "--root", str(tmp_path), "--campaign", "x", *extra])


def test_json_documents_hostile_text(tmp_path: Path) -> None:
    cell = tmp_path / "x" / "cells" / "c1" / "ncu_kernels.json"
    cli(["campaign", "import-ncu", "--root", str(tmp_path), "--campaign", "x", "--cell-id", "c1", "--bundle",
         str(FX / "gemm_bf16.ncu-rep")])
    b = bundle_copy(tmp_path)
    pristine = cell.read_text()
    for text in ("[" * 100_000, '{"kernels": [NaN]}', b"\xff\xfe{}", "", "null", pristine.replace("0.", "Infinity", 1),
                 pristine.replace('"duration_ns": ', '"duration_ns": 1e999, "x": ', 1)):
        for target in (cell, b / "manifest.json"):
            (target.write_bytes if isinstance(text, bytes) else target.write_text)(text)
        assert cli(["campaign", "check", "--root", str(tmp_path), "--campaign", "x"]) == "clean"
        assert cli(["analyze", str(b)]) == "clean"
        cell.write_text(pristine)


# -- names, options, the Python API ------------------------------------------------------------------
@pytest.mark.parametrize("cell_id", ["c1\n", "c1\r", " c1", "c/1", "..", ".c1", "c" * 101, "c1\x00", "-c1", ""])
def test_cell_ids_and_slugs_are_names(tmp_path: Path, cell_id: str) -> None:
    for args in (["--campaign", "x", "--cell-id", cell_id], ["--campaign", cell_id, "--cell-id", "c1"]):
        assert cli(["campaign", "import-ncu", "--root", str(tmp_path), *args, "--bundle",
                    str(FX / "fp8_gemm.ncu-rep")]) == "clean"
    assert not list(tmp_path.rglob("ncu_kernels.json"))


@pytest.mark.parametrize("argv", [
    ["k8s", "inspect", "--timeout", "nan", "deploy/x"], ["k8s", "inspect", "--timeout", "inf", "deploy/x"],
    ["k8s", "inspect", "--timeout", "-1", "deploy/x"], ["k8s", "inspect", "--timeout", "0", "deploy/x"],
    ["k8s", "cleanup", "--timeout", "1e999"], ["k8s", "inspect", "deploy/--kubeconfig=evil"],
    ["k8s", "inspect", "-n", "-kube", "deploy/x"], ["k8s", "capture", "deploy/x", "--out", "o", "--ttl", "-5"],
    ["k8s", "capture", "deploy/x", "--out", "o", "--warmup-port", "70000"],
    ["capture", "--launch-count", "-1", "--out", "o", "--", "true"], ["capture", "--launch-skip", "x", "--out", "o"],
    ["launch", "--port", "0", "--", "true"], ["op", "gemm", "--m", "-4", "--out", "o", "--dry-run"],
    ["op", "callable", "--flops", "nan", "--out", "o", "--dry-run"], ["analyze", ""], ["analyze", " "],
    ["report", str(FX / "fp8_gemm.ncu-rep"), "--out", ""], ["campaign", "check", "--campaign", "x", "--root", ""],
    ["analyze", str(FX / "fp8_gemm.ncu-rep"), "--kernel", "regex:("],
    ["analyze", str(FX / "fp8_gemm.ncu-rep"), "--hw", "no-such-device"],
])
def test_bad_option_values_are_one_line(argv: list[str]) -> None:
    assert cli(argv) == "clean"


@FUZZ
@given(value=ANY_VALUE | st.binary(max_size=8) | st.just(Path("")) | st.just(object()) | st.just(""))
def test_fuzz_api_types(value: Any) -> None:
    api(lambda: kernelscope.load(value))
    api(lambda: kernelscope.analyze(value))
    api(lambda: kernelscope.load(str(FX / "fp8_gemm.ncu-rep"), kernel=value))
    api(lambda: kernelscope.analyze(str(FX / "fp8_gemm.ncu-rep"), hw=value))
    api(lambda: kernelscope.analyze(str(FX / "fp8_gemm.ncu-rep"), ceilings=value))


def test_api_paths(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert len(kernelscope.load(FX / "fp8_gemm.ncu-rep")) == 1  # a Path is one input
    shutil.copy(FX / "fp8_gemm.ncu-rep", tmp_path / "here.ncu-rep")
    monkeypatch.chdir(tmp_path)  # a report in the working directory must not be picked up by ""
    for empty in ("", [""], " ", [FX / "fp8_gemm.ncu-rep", ""]):  # (Path("") is Path("."): asked for)
        with pytest.raises(kernelscope.KernelscopeError):
            kernelscope.load(empty)


# -- outputs: special files and a full disk -----------------------------------------------------------
def test_outputs_never_replace_special_files_and_leave_no_temp(tmp_path: Path) -> None:
    rep = str(FX / "fp8_gemm.ncu-rep")
    os.mkfifo(tmp_path / "fifo")
    for argv in (["analyze", rep, "--out-dir", "/dev/full"], ["analyze", rep, "--out-dir", str(tmp_path / "fifo")],
                 ["campaign", "export", "--campaign", "x", "--root", str(tmp_path), "--parquet", "/dev/null"],
                 ["bundle", "kernel-internals", "--bundle", "/dev/zero"]):
        assert cli(argv) == "clean"
    with pytest.raises(files.KernelscopeError, match="not a regular file"):
        files.write_file("x", Path("/dev/full"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo"]


def test_disk_full_leaves_no_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ENOSPC on the nth write (the way /dev/full fails every write): the error is one line and
    neither the temp files nor a half-written output stay behind, nor the directory made for them."""
    real = os.fdopen

    class Full(io.RawIOBase):
        def writable(self) -> bool:
            return True

        def write(self, b: Any) -> int:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def full_fdopen(fd: int, mode: str = "r", *a: Any, **k: Any) -> Any:
        os.close(fd)
        return Full() if "w" in mode else real(fd, mode, *a, **k)

    monkeypatch.setattr(files.os, "fdopen", full_fdopen)
    out = tmp_path / "out"
    assert cli(["analyze", str(FX / "fp8_gemm.ncu-rep"), "--out-dir", str(out)]) == "clean"
    assert not out.exists()
    assert cli(["campaign", "import-ncu", "--root", str(tmp_path), "--campaign", "x", "--cell-id", "c1", "--bundle",
                str(FX / "fp8_gemm.ncu-rep")]) == "clean"
    assert not list(tmp_path.rglob("*.tmp")) and not list((tmp_path / "x").glob("cells/*"))
