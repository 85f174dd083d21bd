"""Goldens for every format of every verb that reads reports, on the committed real H200 fixtures
(issue 22, "How it is checked"): a change to any output shows up as a diff to review.

Covered here: analyze (table, json, csv; `--details`; `--per-launch`), join with an nsys and a
shares file (table, json, csv, markdown), ceilings list (all four), bundle kernel-internals (the
file it writes), report (the HTML's text), roofline (its data, legend and key), campaign check (all
four) and render (the HTML's text), and kernels `--dry-run` (kernels cannot read a saved listing:
without --dry-run it runs ncu). Elsewhere: analyze's and join's markdown without a profile
(test_terminal.py: golden/analyze.md, join.md) and diff in every format (test_diff.py:
golden/diff*.{txt,json,csv,md}).

`normalise` replaces only what changes from run to run: the time a document was written
(`analyzed_at`, `captured_at`), this package's version (`kernelscope X.Y.Z`) and the test's tmp
directory. Paths a report recorded at capture (`/tmp/fx/...`, `/work/main/...`) are data and stay.
JSON goldens are the document re-indented (key order kept), so a diff reads line by line; CSV
goldens have their CRLF row ends as LF. The roofline golden is its geometry (roofline_data) and
the text the plot draws (title, legend, key), not the SVG: matplotlib's paths and ids vary by
version and say nothing a reader checks. Rewrite with KERNELSCOPE_GOLDEN=write.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path

import pytest

from kernelscope import __version__
from kernelscope.cli import main

Golden = Callable[[str, str], None]
GEMMS = ["gemm_bf16.ncu-rep", "decode_gemm.ncu-rep", "gemm_basic.ncu-rep"]
ROOFS = [*GEMMS, "fp8_gemm.ncu-rep", "attention_fa2.ncu-rep.gz"]  # wgmma bf16, fp8, mma.sync bf16, HBM
BF16_GEMM = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"
DECODE = "nvjet_sm90_tst_64x8_64x16_2x1_v_bz_NNT"
SOFTMAX = ("void at::native::(anonymous namespace)::cunn_SoftMaxForwardReg<c10::BFloat16, float, c10::BFloat16>"
           "(T3 *, const T1 *, T5)")
NSYS = ('"Time (%)","Total Time (ns)","Instances","Avg (ns)","Med (ns)","Min (ns)","Max (ns)","StdDev (ns)","Name"\n'
        f'56.1,"1,234,567",10,123456.7,123456,120000,130000,0,"{SOFTMAX}"\n'
        '22.7,500000,5,100000,100000,100000,100000,0,"divergent_fma(float *, int)"\n'
        '21.1,465000,3,155000,155000,150000,160000,0,"void other_kernel(int)"\n')  # nsys stats' layout
SHARES = "name,share %\n_Z13divergent_fmaPfi,12.5\ncunn_SoftMaxForwardReg,40.0\n"


def normalise(text: str, tmp: Path | None = None) -> str:
    """What varies from run to run, replaced (see the module docstring); nothing else."""
    text = re.sub(r'"(analyzed_at|captured_at)": ?"[^"]*"', r'"\1": "<now>"', text)
    text = text.replace(f"kernelscope {__version__}", "kernelscope <version>")
    return text.replace(str(tmp), "<tmp>") if tmp is not None else text


def as_golden(out: str, fmt: str, tmp: Path | None = None) -> str:
    """A verb's output as its golden holds it: JSON re-indented, CSV rows LF-ended, normalised."""
    out = normalise(out, tmp)
    if fmt == "json":
        return json.dumps(json.loads(out), indent=1, ensure_ascii=False) + "\n"
    if fmt == "csv":
        assert out.count("\r\n") == out.count("\n"), "RFC 4180 rows end in CRLF"
        return out.replace("\r\n", "\n")
    return out


class _Text(HTMLParser):
    """An HTML page's visible text: one line a block, ` | ` between table cells, a space before a
    span; the SVG, script and style skipped (the roofline's own golden covers the plot)."""

    BLOCKS = {"p", "div", "h1", "h2", "h3", "h4", "li", "tr", "table", "section", "details", "summary", "br",
              "dt", "dd", "caption", "ul", "ol"}
    HIDDEN = {"svg", "script", "style"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.hidden = 0
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.hidden += tag in self.HIDDEN
        if tag in self.BLOCKS:
            self.parts.append("\n")
        elif tag in ("td", "th") and self.parts and not self.parts[-1].endswith("\n"):
            self.parts.append(" | ")
        elif tag == "span":  # the verdict mix's and stall bars' segments, a row's input beside its name
            self.parts.append(" ")

    def handle_endtag(self, tag: str) -> None:
        self.hidden -= tag in self.HIDDEN
        if tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self.hidden:
            self.parts.append(re.sub(r"\s+", " ", data))


def html_text(path: Path) -> str:
    parser = _Text()
    parser.feed(path.read_text())
    lines = (" ".join(line.split()) for line in "".join(parser.parts).splitlines())
    return "".join(f"{line}\n" for line in lines if line)


@pytest.fixture
def run(fx: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Callable[..., str]:
    """`kernelscope ARGV` in the fixtures directory at 160 columns: its stdout (exit code checked)."""
    monkeypatch.chdir(fx)
    monkeypatch.setenv("COLUMNS", "160")
    monkeypatch.delenv("NO_COLOR", raising=False)

    def _run(*argv: str, code: int = 0) -> str:
        assert main(list(argv)) == code, capsys.readouterr().err
        return capsys.readouterr().out
    return _run


# -- analyze -------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt,ext", [("table", "txt"), ("json", "json"), ("csv", "csv")])
def test_analyze(run: Callable[..., str], golden: Golden, fmt: str, ext: str) -> None:
    """The three GEMMs (markdown: golden/analyze.md, test_terminal.py)."""
    out = run("analyze", *GEMMS, "--format", fmt)
    golden(f"analyze.{ext}", as_golden(out, fmt))
    if fmt == "json":
        doc = json.loads(out)
        bf16 = next(k for k in doc["kernels"] if k["source"] == "gemm_bf16.ncu-rep")
        assert bf16["flops"]["tensor_bf16"] == 274_877_906_944
        assert bf16["achieved_tflops"] == pytest.approx(812.2, abs=0.05)
        basic = next(k for k in doc["kernels"] if k["source"] == "gemm_basic.ncu-rep")
        assert basic["provisional"] and basic["pct_sol"] is None and basic["achieved_tflops"] is None
    if fmt == "table":
        assert f"3  {DECODE}         decode_gemm     35.3     4.9  memory    HBM                      81" in out


def test_analyze_details(run: Callable[..., str], golden: Golden) -> None:
    out = run("analyze", *GEMMS, "--details")
    golden("analyze-details.txt", out)
    assert "compute-bound at the tensor bf16 roof (wgmma)" in out and f"{BF16_GEMM}" in out


def test_analyze_per_launch(run: Callable[..., str], golden: Golden) -> None:
    """The vLLM capture: 15 launches of FA3, nvjet GEMMs and inductor's Triton kernels."""
    out = run("analyze", "vllm_offline.ncu-rep.gz", "--per-launch")
    golden("analyze-per-launch.txt", out)
    assert out.startswith("13 kernel(s), 15 launch(es) from 1 input(s); NVIDIA H200") and "launch" in out


# -- join ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt,ext", [("table", "txt"), ("json", "json"), ("csv", "csv"), ("markdown", "md")])
def test_join_with_profiles(run: Callable[..., str], golden: Golden, tmp_path: Path, fmt: str, ext: str) -> None:
    """softmax and the divergent kernel beside an nsys kern_sum (one row no capture holds) and a
    shares file: ranked by the nsys totals."""
    (tmp_path / "kern_sum.csv").write_text(NSYS)
    (tmp_path / "shares.csv").write_text(SHARES)
    out = run("join", "softmax.ncu-rep.gz", "divergent.ncu-rep", "--nsys", str(tmp_path / "kern_sum.csv"),
              "--zymtrace", str(tmp_path / "shares.csv"), "--format", fmt)
    golden(f"join-nsys.{ext}", as_golden(out, fmt, tmp_path))
    if fmt == "json":
        doc = json.loads(out)
        assert [(k["name"], k["nsys_total_ms"]) for k in doc["kernels"]] == [
            ("cunn_SoftMaxForwardReg", pytest.approx(1.234567)), ("divergent_fma", pytest.approx(0.5))]
        assert [u["kernel"] for u in doc["unmatched"]] == ["void other_kernel(int)"]


# -- ceilings list -------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt,ext", [("table", "txt"), ("json", "json"), ("csv", "csv"), ("markdown", "md")])
def test_ceilings_list(run: Callable[..., str], golden: Golden, fmt: str, ext: str) -> None:
    out = run("ceilings", "list", "--format", fmt)
    golden(f"ceilings.{ext}", as_golden(out, fmt))
    if fmt == "csv":
        assert "h200-sxm.memory.hbm,4.8,TB/s,3201.0,NVIDIA H200," in out
        assert "h100-sxm.compute.fp4,,TFLOP/s,,NVIDIA H100 80GB HBM3,Hopper has no FP4 tensor cores" in out


# -- bundle kernel-internals ---------------------------------------------------------------------
def test_kernel_internals(run: Callable[..., str], fx: Path, golden: Golden, tmp_path: Path) -> None:
    """The causal-attention bundle's block, spliced into another tool's file."""
    bundle = tmp_path / "attn"
    shutil.copytree(fx / "bundle_attn_causal", bundle)
    theirs = '{"run": {"tokens_per_s": 1234.5, "batch": 8}, "notes": ["kept as written"]}\n'
    (bundle / "inference_perfbench_v1.json").write_text(theirs)
    assert run("bundle", "kernel-internals", str(bundle)) == ""
    text = (bundle / "inference_perfbench_v1.json").read_text()
    golden("kernel-internals.json", normalise(text, tmp_path))
    (block,) = json.loads(text)["kernel_internals"]["per_kernel"].values()
    assert block["bound"] == "latency" and block["pct_sol"] == pytest.approx(46.25, abs=0.01)
    assert block["sm_throughput_pct_peak"] is None  # the bundle's roofline set has no SM throughput: null, not 0


# -- report and roofline -------------------------------------------------------------------------
def test_report_html_text(run: Callable[..., str], golden: Golden, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    run("report", *GEMMS, "--out", str(out))
    text = html_text(out)
    golden("report.txt", normalise(text, tmp_path))
    assert "Kernel time by verdict: compute? 48 %, compute 47 %, memory 5 %" in text


def test_roofline(run: Callable[..., str], fx: Path, golden: Golden, tmp_path: Path) -> None:
    """The verb writes the plot; the golden is what it is drawn from and the text drawn on it."""
    from kernelscope import app
    from kernelscope.report import roofline_data, roofline_plot
    from kernelscope.report.kernels import ranked

    svg = tmp_path / "roofline.svg"
    run("roofline", *ROOFS, "--out", str(svg))
    assert svg.read_bytes().startswith(b"<?xml") and b"</svg>" in svg.read_bytes()
    an = app.analyze(app.AnalyzeRequest(tuple(fx / p for p in ROOFS)))
    data = roofline_data.build(ranked(an.items), an.ceilings, None, an.labels())
    title = app.figure_title(an)
    with roofline_plot._literal_text():
        drawn = roofline_plot.draw(data, title, an.headline())
    legend = [t.get_text() for leg in drawn.figure.legends for t in leg.get_texts()]
    key = next(t.get_text() for t in drawn.figure.texts if t.get_gid() == "key")
    roofline_plot.plt.close(drawn.figure)
    doc = {"title": title, "legend": legend, "key": key.splitlines(), "placed": sorted(drawn.labels),
           "data": dataclasses.asdict(data)}
    golden("roofline.json", json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    assert [r.key for r in data.roofs] == ["h200-sxm.compute.bf16@mma.sync", "h200-sxm.compute.bf16@wgmma",
                                           "h200-sxm.compute.bf16", "h200-sxm.compute.fp8@wgmma"]  # bf16: the hollow
    gemm = next(p for p in data.points if p.origin == "gemm_bf16")
    assert gemm.bound == "compute" and gemm.tflops == pytest.approx(812.2, abs=0.05)


# -- campaigns -----------------------------------------------------------------------------------
@pytest.fixture
def campaign(run: Callable[..., str], fx: Path, tmp_path: Path) -> Path:
    """A campaign of two cells: the causal-attention bundle and the bf16 GEMM report."""
    root = tmp_path / "campaigns"
    run("campaign", "import-ncu", "--root", str(root), "--campaign", "h200", "--cell-id", "attn",
        str(fx / "bundle_attn_causal"))
    run("campaign", "import-ncu", "--root", str(root), "--campaign", "h200", "--cell-id", "gemm",
        str(fx / "gemm_bf16.ncu-rep"))
    return root


@pytest.mark.parametrize("fmt,ext", [("table", "txt"), ("json", "json"), ("csv", "csv"), ("markdown", "md")])
def test_campaign_check(run: Callable[..., str], campaign: Path, golden: Golden, fmt: str, ext: str) -> None:
    """An L4 campaign with no krhpa block: a failure, exit 1 under --strict."""
    out = run("campaign", "check", "--root", str(campaign), "--campaign", "h200", "--strict", "--format", fmt,
              code=1)
    golden(f"campaign-check.{ext}", as_golden(out, fmt, campaign.parent))
    assert "L4 campaign (ncu roofline in attn, gemm): krhpa block missing" in out


def test_campaign_render_text(run: Callable[..., str], campaign: Path, golden: Golden) -> None:
    run("campaign", "render", "--root", str(campaign), "--campaign", "h200")
    text = html_text(campaign / "h200" / "report.html")
    golden("campaign-render.txt", normalise(text, campaign.parent))
    assert "1 | flash_fwd_kernel | attn | 492.9 | 59.3 | latency | tensor bf16 (mma.sync) | 46 |" in text


# -- kernels -------------------------------------------------------------------------------------
def test_kernels_dry_run(run: Callable[..., str], golden: Golden) -> None:
    names = run("kernels", "--dry-run", "--ncu", "/usr/local/cuda/bin/ncu", "--", "python3", "step.py")
    timed = run("kernels", "--dry-run", "--timed", "5", "--ncu", "/usr/local/cuda/bin/ncu", "--", "python3",
                "step.py")
    golden("kernels-dry-run.txt", names + timed)
    assert "--launch-count 5" in timed and "--launch-count" not in names
