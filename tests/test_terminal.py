"""The terminal table at 60, 100 and 200 columns and piped, one row a kernel, inert names, and the
markdown golden files (tests/golden; rewrite with KERNELSCOPE_GOLDEN=write after reviewing a change)."""

from __future__ import annotations

import csv
import io
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kernelscope.cli import main
from kernelscope.report.progress import Ticker
from kernelscope.report.safe_text import clean, elide
from kernelscope.report.table import Col, Table, render_markdown, render_text

THREE = ("gemm_bf16.ncu-rep", "decode_gemm.ncu-rep", "gemm_basic.ncu-rep")
HOSTILE = "evil\x1b[31mred\x1b]8;;http://x.example/\x07link\x1b]8;;\x07[/][link=http://x.example/]click[/link]\u202e"


def cli(*argv: str, columns: int | None = None) -> subprocess.CompletedProcess[str]:
    """kernelscope in a child process, stdout a pipe (not a terminal), as in CI."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns:
        env["COLUMNS"] = str(columns)
    return subprocess.run([sys.executable, "-m", "kernelscope.cli", *argv], capture_output=True, text=True, env=env)


def table_lines(out: str) -> list[str]:
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(r"^ *#  kernel", line))
    end = next(i for i in range(start + 2, len(lines)) if not re.match(r"^ *\d+ ", lines[i]))
    return lines[start:end]


@pytest.mark.parametrize("columns", [60, 100, 200])
def test_table_fits_every_width_and_keeps_name_tails(fx: Path, columns: int) -> None:
    res = cli("analyze", *(str(fx / n) for n in THREE), columns=columns)
    assert res.returncode == 0, res.stderr
    assert max(len(line) for line in res.stdout.splitlines()) <= columns
    head, rule, *rows = table_lines(res.stdout)
    assert [r.split()[0] for r in rows] == ["1", "2", "3"]  # ranks, not launch ids
    bf16 = next(r for r in rows if "gemm_bf16" in r or "bf16" in r.split()[2])
    assert "coopA_NNT" in bf16  # the tile-shape tail of the name survives elision
    assert {"time µs", "bound", "roof %"} <= set(re.split(r"\s{2,}", head))  # the essentials stay
    if columns == 60:
        assert "…" in bf16 and "not shown at 60 columns: time %" in res.stdout
    if columns == 200:
        assert "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT" in bf16 and "next lever" in head
        assert re.search(r"compute\s+tensor bf16 \(wgmma\)\s+93\s+82\s", bf16)  # roof at its clock, datasheet beside
        assert "not shown" not in res.stdout


def test_piped_is_plain_whole_and_one_row_a_kernel(fx: Path) -> None:
    res = cli("analyze", *(str(fx / n) for n in THREE))
    assert res.returncode == 0 and "\x1b" not in res.stdout and "─" not in res.stdout  # plain text
    _, _, *rows = table_lines(res.stdout)
    assert len(rows) == 3 and "nvjet_sm90_tst_64x8_64x16_2x1_v_bz_NNT" in res.stdout  # nothing cut
    assert {"gemm_bf16", "decode_gemm", "gemm_basic"} <= set(res.stdout.split())  # the source column
    assert "bound provisional (bound?) for #1: flops, dram_bytes not measured, so no %SoL" in res.stdout  # basic


def test_300_launches_are_four_kernels_not_six_thousand_lines() -> None:
    """299 launches of three instantiations of vectorized_elementwise_kernel and one other kernel."""
    many = Path(__file__).parents[1] / "bench" / "data" / "many.ncu-rep.gz"
    res = cli("analyze", str(many), columns=120)
    lines = res.stdout.splitlines()
    _, _, *rows = table_lines(res.stdout)
    assert len(rows) == 4 and len(lines) < 40
    assert [r.split()[1][:18] for r in rows] == ["vectorized_elemen…"] * 3 + ["distribution_eleme"]
    assert {"…bda(float) (instance 1)]…>", "…rnal::MulFunctor<float>>…>", "…FunctorOnSelf_add<float>…>"} == {
        re.split(r"\s{2,}", r)[1][17:] for r in rows[:3]}  # what tells them apart survives the cut
    assert sorted(int(re.split(r"\s{2,}", r)[2]) for r in rows) == [1, 99, 100, 100]  # launches together
    assert "every launch: --per-launch" in res.stdout
    per_launch = cli("analyze", str(many), "--per-launch", columns=200)
    assert len(table_lines(per_launch.stdout)) == 2 + 300


def test_details_on_request(fx: Path) -> None:
    res = cli("analyze", str(fx / "decode_gemm.ncu-rep"), "--details", columns=200)
    assert "memory-bound at the HBM roof: 81 % of it at the measured 3195 MHz" in res.stdout
    assert "memory ceiling h200-sxm.memory.hbm = 4.8 TB/s" in res.stdout
    assert "evidence: HBM 3.88 TB/s = 81 % of 4.79 TB/s" in res.stdout  # the figures that decided
    assert "ncu's verdict, agrees: ncu: SM " in res.stdout and "code: cuBLAS (library" in res.stdout
    narrow = cli("analyze", str(fx / "decode_gemm.ncu-rep"), "--details", columns=70).stdout
    assert max(len(line) for line in narrow.splitlines()) <= 70 and "1. [batch-rows]" in narrow


def test_control_sequences_and_markup_in_names_are_inert(fx: Path, tmp_path: Path,
                                                         variant: Callable[..., Path]) -> None:
    report = variant(fx / "decode_gemm-raw.csv", tmp_path / "hostile.csv", name=HOSTILE)
    for fmt in ("table", "markdown"):
        res = cli("analyze", str(report), "--format", fmt, columns=200)
        assert res.returncode == 0 and "Traceback" not in res.stderr
        assert "\x1b" not in res.stdout and "\x07" not in res.stdout and "\u202e" not in res.stdout
    table = cli("analyze", str(report), columns=200).stdout
    assert "evilredlink[/][link=http://x.example/]click[/link]" in table  # printed as text, not obeyed


def test_clean_and_elide() -> None:
    assert clean("a\x1b[1;31mb\x1b]0;title\x07c\x9b2Jd\x00e\u2066f") == "abcd e f"
    assert clean("nvjet_sm90_tst") == "nvjet_sm90_tst"
    # two names that would look alike: the invisible characters show as spaces (ZWSP, ZWJ, BOM, U+2028)
    assert clean("gemm\u200b_kernel\u200d\ufeff\u2028x") == "gemm _kernel   x"
    # ...but a CSV field's data keeps them, as written (an emoji's ZWJ, Persian's ZWNJ)
    assert clean("family_👨\u200d👩_kernel می\u200cخواهم", layout=True) == "family_👨\u200d👩_kernel می\u200cخواهم"
    name = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"
    assert elide(name, 24) == "nvjet_sm9…h_bz_coopA_NNT" and len(elide(name, 24)) == 24
    assert elide(name, 100) == name


def test_a_campaign_configs_context_is_inert_in_the_html(fx: Path, tmp_path: Path) -> None:
    """The config's context fills the page's title and header: its escape sequences, BEL and bidi
    override reached the HTML raw before (fuzz pass)."""
    config = tmp_path / "config.yaml"
    config.write_text('context: {model: "\\e[31mred\\e]0;x\\a\\u202eabc", gpu: "H200\\u200b"}\n')
    out = tmp_path / "r.html"
    assert main(["report", str(fx / "fp8_gemm.ncu-rep"), "--out", str(out), "--campaign-config", str(config)]) == 0
    page = out.read_text()
    assert not {"\x1b", "\x07", "\u202e", "\u200b"} & set(page) and "model red abc" in page


def test_a_kernel_name_is_inert_in_the_htmls_hover_data(fx: Path, tmp_path: Path) -> None:
    """The roofline's hover text (JSON in the page, shown by textContent) held a name's bidi override
    and zero-width characters raw (second fuzz pass); the CSV keeps the invisible ones, as written."""
    rows = list(csv.reader((fx / "decode_gemm-raw.csv").open(newline="")))
    rows[2][rows[0].index("Kernel Name")] = "bidi\u202eevil\u200bkern(int)"
    src = tmp_path / "named.csv"
    with src.open("w", newline="") as fh:
        csv.writer(fh, quoting=csv.QUOTE_ALL).writerows(rows)
    assert main(["report", str(src), "--out", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text()
    assert "\u202e" not in page and "\u200b" not in page and "bidi evil kern" in page
    assert main(["analyze", str(src), "--out-dir", str(tmp_path / "o")]) == 0
    table = (tmp_path / "o" / "kernels.csv").read_text(encoding="utf-8")
    assert "bidi evil\u200bkern(int)" in table  # the override blanked everywhere, the zero-width space kept


def test_markdown_cells_cannot_break_the_table() -> None:
    t = Table((Col("name", "kernel", code=True), Col("verdict", "verdict")),
              [["a|b`c", "*bold* <img src=x> [x](y) | _u_"]])
    row = render_markdown(t).splitlines()[2]
    assert row == r"| `` a\|b`c `` | \*bold\* &lt;img src=x> \[x\](y) \| \_u\_ |"
    assert row.count(" | ") == 1  # still two cells


def test_text_table_hides_low_priority_columns_first() -> None:
    t = Table((Col("name", "kernel", elide=10), Col("a", "aaaa", drop=1), Col("b", "bbbb", drop=2)),
              [["x" * 30, 1, 2]])
    out = render_text(t, 18)
    assert out.splitlines()[0].split() == ["kernel", "aaaa"] and "bbbb" in out.split("not shown at 18")[1]


@pytest.mark.parametrize("name,argv", [
    ("analyze", ["analyze", "gemm_bf16.ncu-rep", "decode_gemm.ncu-rep", "gemm_basic.ncu-rep", "--format",
                 "markdown"]),
    ("join", ["join", "--ncu", "decode_gemm.ncu-rep", "--ncu", "fp8_gemm.ncu-rep", "--format", "markdown"]),
])
def test_markdown_golden(fx: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                         golden: Callable[[str, str], None], name: str, argv: list[str]) -> None:
    monkeypatch.chdir(fx)
    assert main(argv) == 0
    golden(f"{name}.md", capsys.readouterr().out)


def test_progress_shows_only_past_its_delay_on_its_own_stream() -> None:
    slow = io.StringIO()
    with Ticker(slow, after=0.0, every=60.0) as tick:
        tick.step("reading 3 input(s)\x1b[2J")
        time.sleep(0.6)
    assert re.fullmatch(r"kernelscope: reading 3 input\(s\) … \d+ s\n", slow.getvalue())  # once, not a flood
    quick = io.StringIO()
    with Ticker(quick) as tick:  # the default two seconds: a quick run says nothing
        tick.step("reading")
    assert quick.getvalue() == ""


def test_a_directory_of_separate_reports_labels_each(fx: Path, tmp_path: Path) -> None:
    """Two captures of the same GEMM in one plain directory stay told apart; a bundle stays one name."""
    caps = tmp_path / "caps"
    caps.mkdir()
    for name in ("gemm_bf16.ncu-rep", "g_rmin.ncu-rep"):
        shutil.copy(fx / name, caps / name)
    res = cli("analyze", str(caps), str(fx / "bundle_attn_causal"))  # piped: nothing elided
    _, _, *rows = table_lines(res.stdout)
    assert sorted(r.split()[2] for r in rows) == ["bundle_attn_causal", "caps/g_rmin", "caps/gemm_bf16"]


def test_json_inert_escapes_every_character_it_finds_past_its_byte_scan() -> None:
    """json_inert's fast path (byte scans) lets through only text its regex finds nothing in: every
    code point the regex escapes, beside a dash (a note's, which makes the text non-ASCII), is escaped."""
    from kernelscope.report.safe_text import _RAW_IN_JSON, json_inert

    found = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000 and _RAW_IN_JSON.match(chr(c))]
    assert len(found) == 55  # DEL, C1, bidi, zero-width, line separators, BOM
    for c in found:
        assert json_inert(f'["a—{chr(c)}"]'.encode()) == f'["a—\\u{c:04x}"]'.encode()
    assert json_inert('["a—b"]'.encode()) == '["a—b"]'.encode()
