"""The HTML report in a real headless Chromium at 1280 px: loads offline with no console errors,
the frontier is above the fold, nothing scrolls sideways (at 1280 and 1920 px, with every fixture,
300 launches and long CUTLASS names; the per-launch and campaign pages too), names wrap only where
a name divides, the roofline answers hover and click and draws the roof each verdict reads, stall
bars carry their shares; and hostile names, ceilings keys and titles run no script."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import matplotlib.image
import pytest

import kernelscope
from kernelscope.ceilings import load
from kernelscope.cli import main
from kernelscope.report import roofline_data
from kernelscope.report.html import Page, render_html
from kernelscope.report.kernels import ranked

playwright = pytest.importorskip("playwright.sync_api")

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-quic"]
MANY = Path(__file__).parents[1] / "bench" / "data" / "many.ncu-rep.gz"  # 300 launches of small kernels
NAMES = ["bundle_attn_causal", "gemm_basic.ncu-rep", "decode_gemm.ncu-rep", "divergent.ncu-rep", "fp8_gemm.ncu-rep",
         "softmax.ncu-rep.gz"]
# where each point of the roofline is on screen, from the report's own hover data
POINTS_JS = """() => {
  const svg = document.querySelector('#roofline svg'), m = svg.getScreenCTM();
  return JSON.parse(document.getElementById('points').textContent).map((q) => {
    const pt = svg.createSVGPoint(); pt.x = q[0]; pt.y = q[1]; const c = pt.matrixTransform(m);
    return [c.x, c.y, q[3], q[4]];
  });
}"""


@pytest.fixture()
def browser(chromium: str) -> Iterator[Any]:
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=ARGS)
        yield b
        b.close()


def open_page(browser: Any, path: Path, errors: list[str], width: int = 1280) -> Any:
    page = browser.new_page(viewport={"width": width, "height": 800})
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("dialog", lambda d: (errors.append(f"dialog: {d.message}"), d.dismiss()))
    page.on("request", lambda r: errors.append(r.url) if not r.url.startswith(("file:", "data:")) else None)
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    return page


def test_report_at_1280px(fx: Path, tmp_path: Path, browser: Any) -> None:
    out = tmp_path / "report.html"
    assert main(["report", *[str(fx / n) for n in NAMES], "--out", str(out)]) == 0
    errors: list[str] = []
    page = open_page(browser, out, errors)
    assert errors == []  # no console error, nothing fetched from the network
    width = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert width[0] <= width[1]  # no horizontal scroll at 1280 px
    frontier = page.locator("#frontier tbody tr").first.bounding_box()
    assert frontier is not None and frontier["y"] + frontier["height"] < 800  # above the fold
    assert page.locator("#kernels tbody tr").count() == len(NAMES)
    bounds = {c: page.locator(f"#kernels td.c-{c}").count() for c in ("blue", "yellow", "grey", "red")}
    # the bound cell is coloured by verdict (gemm_basic's provisional compute too; the fp8 GEMM is latency)
    assert bounds == {"blue": 1, "yellow": 2, "grey": 0, "red": 3}
    memory = page.locator("#kernels td.c-blue").first.evaluate("e => getComputedStyle(e).boxShadow")
    assert "rgb(31, 119, 180)" in memory  # the roofline's memory-bound blue
    assert page.locator("#kernels th").first.evaluate("e => getComputedStyle(e).position") == "sticky"
    svg = page.locator("#roofline svg").bounding_box()
    assert svg is not None and svg["width"] > 1100  # the full width of the page
    # every kernel is a point with hover; the hollow one says how it was placed
    points = page.evaluate(POINTS_JS)
    assert len(points) == len(NAMES)
    x, y, rank, _ = next(p for p in points if "AI unmeasured" in p[3])
    page.locator("#roofline").scroll_into_view_if_needed()
    points = page.evaluate(POINTS_JS)
    x, y, rank, _ = next(p for p in points if "AI unmeasured" in p[3])
    page.mouse.move(x, y)
    tip = page.locator("#tip")
    assert tip.is_visible() and "SM busy 93 %" in tip.inner_text() and f"#{rank} nvjet" in tip.inner_text()
    page.mouse.click(x, y)
    assert page.evaluate("location.hash") == f"#k{rank}"
    # stall bars: shares printed on the segments, and the dominant reason named, never folded into "other"
    divergent = page.locator("#stalls tr", has_text="divergent_fma")
    assert "not_selected 61 %" in divergent.inner_text()
    assert "not_selected" in page.locator("#stalls").locator("xpath=preceding-sibling::p[1]").inner_text()
    # a verdict shows what it stands on: its figures, ncu's verdict beside it, who owns the code
    fp8 = page.locator("details", has_text="nvjet_sm90_qqtst").first
    fp8.evaluate("e => e.open = true")
    assert "ncu's verdict, agrees: ncu: SM 48 %, memory 51 % → Small Grid" in fp8.inner_text()
    assert "evidence: L2 51 % of its bandwidth" in fp8.inner_text()
    shot = tmp_path / "report.png"
    page.goto(out.as_uri())
    page.screenshot(path=str(shot))
    pixels = matplotlib.image.imread(str(shot))
    assert pixels.shape[:2] == (800, 1280) and pixels[..., :3].std() > 0.05  # a rendered page


HOSTILE_NAME = "<img src=x onerror=\"window.__pwned='name'\">"
HOSTILE_KEY = "h200<img src=x onerror=window.__pwned='key'>"


def test_hostile_strings_run_no_script(fx: Path, tmp_path: Path, browser: Any) -> None:
    ceilings = tmp_path / "evil.yaml"
    packaged = (Path(kernelscope.__file__).parent / "ceilings" / "sol-ceilings.yaml").read_text()
    ceilings.write_text(packaged.replace("  h200-sxm:", f"  {json.dumps(HOSTILE_KEY)}:"))
    items, table = kernelscope.analyze([str(fx / "decode_gemm.ncu-rep"), str(fx / "gemm_bf16.ncu-rep"),
                                        str(fx / "bundle_attn_causal")], ceilings=str(ceilings))
    assert items[0].compute_ceiling_key.startswith(HOSTILE_KEY)
    items = [replace(a, record=replace(a.record, name=HOSTILE_NAME + f"</script><script>window.__pwned={i}"
                                                  "</script>--><!--"))
             for i, a in enumerate(items)]
    rows = ranked(items)
    title = "<script>window.__pwned='title'</script>"
    page_ = Page(title, "$\\alpha$ " + title, {"model": HOSTILE_NAME, "hardware": HOSTILE_KEY}, {}, "source")
    out = tmp_path / "hostile.html"
    out.write_text(render_html(rows, roofline_data.build(rows, table), page_))
    errors: list[str] = []
    page = open_page(browser, out, errors)
    page.locator("#roofline").scroll_into_view_if_needed()
    for x, y, _, _ in page.evaluate(POINTS_JS):
        page.mouse.move(x, y)
        assert HOSTILE_NAME in page.locator("#tip").inner_text()  # shown as text
    for d in page.locator("details").all():
        d.evaluate("e => e.open = true")
    page.mouse.move(5, 5)
    assert page.evaluate("typeof window.__pwned") == "undefined" and errors == []
    assert page.locator("img").count() == 0 and page.locator("script").count() == 2  # ours: data and code
    assert HOSTILE_NAME in page.locator("#kernels").inner_text()
    assert HOSTILE_KEY in page.locator("body").inner_text()


def test_hostile_ceilings_key_and_title_through_the_cli(fx: Path, tmp_path: Path, browser: Any) -> None:
    ceilings = tmp_path / "evil.yaml"
    packaged = (Path(kernelscope.__file__).parent / "ceilings" / "sol-ceilings.yaml").read_text()
    ceilings.write_text(packaged.replace("  h200-sxm:", f"  {json.dumps(HOSTILE_KEY)}:"))
    assert load(ceilings).devices[HOSTILE_KEY]
    out = tmp_path / "r.html"
    assert main(["report", str(fx / "decode_gemm.ncu-rep"), "--ceilings", str(ceilings), "--title",
                 "<script>window.__pwned='t'</script>", "--out", str(out)]) == 0
    errors: list[str] = []
    page = open_page(browser, out, errors)
    page.locator("#roofline").scroll_into_view_if_needed()
    for x, y, _, _ in page.evaluate(POINTS_JS):
        page.mouse.move(x, y)
    assert page.evaluate("typeof window.__pwned") == "undefined" and errors == []
    assert HOSTILE_KEY in page.locator("body").inner_text()


# every token of a kernel or input name (a run of letters and digits: `TensorIteratorBase`, `256x128`)
# on one line: a name wraps where it divides (a <wbr> after :: , < _ /, or a space, hyphen or bracket)
BROKEN_WORDS_JS = """() => {
  const broken = [];
  const names = [...document.querySelectorAll('td.name, summary b, ul.stands li')]
    .filter((e) => e.tagName !== 'LI' || e.firstChild.textContent === 'full name');
  for (const el of names) {
    const walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      for (const m of n.data.matchAll(/[A-Za-z0-9]+/g)) {
        const r = document.createRange();
        r.setStart(n, m.index);
        r.setEnd(n, m.index + m[0].length);
        const lines = new Set([...r.getClientRects()].filter((q) => q.width > 0).map((q) => Math.round(q.top)));
        if (lines.size > 1) broken.push(m[0]);
      }
    }
  }
  return broken;
}"""
WIDTH_JS = "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"
CUTE = ("void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, int>, "
        "cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm90TmaGmmaWarpSpecializedCooperative<4, "
        "cute::tuple<cute::C<2>, cute::C<1>, cute::C<1>>, cutlass::gemm::KernelTmaWarpSpecializedCooperative>, "
        "cute::tuple<cute::C<256>, cute::C<128>, cute::C<64>>, cutlass::bfloat16_t, cute::tuple<long, cute::C<1>, "
        "long>, cute::TiledMMA<cute::MMA_Atom<cute::SM90_64x128x16_F32BF16BF16_SS<(cute::GMMA::Major)0, "
        "(cute::GMMA::Major)0, (cute::GMMA::ScaleIn)1, (cute::GMMA::ScaleIn)1>>>>, "
        "cutlass::epilogue::collective::CollectiveEpilogue<cutlass::epilogue::Sm90TmaWarpSpecializedCooperative<{i}>>>>"
        "(T1::Params)")
CUTLASS3 = ("cutlass3x_sm90_tensorop_s64x128x16gemm_bf16_bf16_f32_bf16_bf16_256x128x64_2x1x1_0_tnn_align8_"
            "warpspecialized_cooperative_epi_tma_{i}")
KERNEL2 = ("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_256x128_32x3_nn_align8_{i}>"
           "(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_256x128_32x3_nn_align8_{i}::Params)")


def cutlass_reports(fx: Path, tmp: Path, variant: Any) -> list[Path]:
    """Real GEMM figures (ncu's raw CSV page of the bf16 GEMM) under long CUTLASS names."""
    src = fx / "gemm_bf16-raw.csv"
    return [variant(src, tmp / f"{stem}.csv", name, copies=2)
            for stem, name in (("cute", CUTE), ("cutlass3x", CUTLASS3), ("kernel2", KERNEL2))]


def assert_fits(page: Any, width: int) -> None:
    """No horizontal scroll with every verdict open, the table's last column inside the page, and
    no name broken inside a word."""
    page.evaluate("document.querySelectorAll('details').forEach((d) => { d.open = true; })")
    scroll, client = page.evaluate(WIDTH_JS)
    assert client == width and scroll <= width, f"{scroll} px wide at {width} px"
    last = page.locator("#kernels th").last.bounding_box()
    assert last is not None and last["x"] + last["width"] <= width  # "next lever" is not cut off
    assert page.evaluate(BROKEN_WORDS_JS) == []


@pytest.mark.parametrize("width", [1280, 1920])
def test_every_fixture_and_300_launches_fit(fx: Path, tmp_path: Path, browser: Any, variant: Any,
                                            width: int) -> None:
    reports = sorted(fx.glob("*.ncu-rep*")) + [MANY, *cutlass_reports(fx, tmp_path, variant)]
    out = tmp_path / "all.html"
    assert main(["report", *map(str, reports), "--out", str(out)]) == 0
    errors: list[str] = []
    page = open_page(browser, out, errors, width)
    assert errors == []
    assert "333 launch(es) from 17 input(s)" in page.locator("p.sub").inner_text()  # 27 + 300 + 6
    rows = page.locator("#kernels tbody tr")
    assert rows.count() == 35
    table = page.locator("#kernels").inner_text()
    assert "cutlass3x_sm90_tensorop_s64x128x16gemm" in table and "device_kernel<…0…>" in table
    kernel = page.locator("#kernels th").nth(1).bounding_box()
    assert kernel is not None and kernel["width"] >= 250  # names get the room the figures leave
    assert_fits(page, width)
    # the long full name is in the verdict, wrapped at its boundaries like the rest
    assert page.locator("ul.stands li", has_text="MainloopSm90TmaGmmaWarpSpecializedCooperative").count() == 2


def test_the_roofline_draws_the_roof_each_verdict_reads(fx: Path, tmp_path: Path, browser: Any) -> None:
    """FlashAttention-2's row says 54 % of the mma.sync roof: the plot draws that roof (636 TFLOP/s
    at the clock it ran at, not only the 989 TFLOP/s datasheet peak) and its hover says so."""
    names = ["attention_fa2.ncu-rep.gz", "gemm_bf16.ncu-rep", "divergent.ncu-rep"]
    out = tmp_path / "r.html"
    assert main(["report", *[str(fx / n) for n in names], "--out", str(out)]) == 0
    errors: list[str] = []
    page = open_page(browser, out, errors)
    fa2 = page.locator("#kernels tr", has_text="flash_fwd_kernel")
    assert "tensor bf16 (mma.sync)" in fa2.inner_text() and "\t54\t" in fa2.inner_text()
    ids = page.evaluate("[...document.querySelectorAll('#roofline svg [id^=roof-]')].map((e) => e.id)")
    assert sorted(set(ids)) == ["roof-h200-sxm.compute.bf16@mma.sync", "roof-h200-sxm.compute.bf16@wgmma",
                                "roof-h200-sxm.compute.fp32", "roof-h200-sxm.memory.hbm"]
    page.locator("#roofline").scroll_into_view_if_needed()
    x, y, _, _ = next(p for p in page.evaluate(POINTS_JS) if "flash_fwd_kernel" in p[3])
    page.mouse.move(x, y)
    tip = page.locator("#tip").inner_text()
    assert "verdict's roof: tensor bf16 (mma.sync) 54 %" in tip
    assert "drawn roof: bf16 (mma.sync) 636 TFLOP/s at 1764 MHz; its tensor_bf16 work at 54 % of it" in tip
    assert "from attention_fa2" in tip and errors == []


def test_per_launch_page_shows_launch_ids(fx: Path, tmp_path: Path, browser: Any) -> None:
    reports = [str(fx / n) for n in ("vllm_offline.ncu-rep.gz", "attention_fa2.ncu-rep.gz")] + [str(MANY)]
    out = tmp_path / "launches.html"
    assert main(["report", *reports, "--per-launch", "--out", str(out)]) == 0
    items, _ = kernelscope.analyze(reports)
    expected = [str(r.lead.record.launch_id) for r in ranked(items, per_launch=True)]
    errors: list[str] = []
    page = open_page(browser, out, errors)
    heads = page.locator("#kernels th").all_inner_texts()
    column = heads.index("launch")
    shown = page.evaluate(f"[...document.querySelectorAll('#kernels tbody tr')].map((r) => r.cells[{column}]"
                          ".textContent)")
    assert shown == expected[:len(shown)] and len(shown) == min(len(expected), 1000) == 316
    assert len(set(zip(shown, page.locator("#kernels tbody td.kernel").all_inner_texts(), strict=True))) == 316
    assert_fits(page, 1280)
    assert errors == []


def test_campaign_page_fits_1280(fx: Path, tmp_path: Path, browser: Any) -> None:
    cells = {"decode-bs64-tp2-fp8kv-cudagraphs": "bundle_attn_causal", "prefill-bs8-tp1-bf16-eager": "fp8_gemm.ncu-rep",
             "serve-llama3-8b-h200-vllm-offline": "vllm_offline.ncu-rep.gz", "gemm-4096x8192x4096": "gemm_bf16.ncu-rep"}
    for cell, src in cells.items():
        assert main(["campaign", "import-ncu", "--root", str(tmp_path), "--campaign", "wide", "--cell-id", cell,
                     "--bundle", str(fx / src)]) == 0
    assert main(["campaign", "render", "--root", str(tmp_path), "--campaign", "wide"]) == 0
    errors: list[str] = []
    page = open_page(browser, tmp_path / "wide" / "report.html", errors)
    heads = page.locator("#kernels th").all_inner_texts()
    assert "cell" in heads
    column = heads.index("cell")
    shown = set(page.evaluate(f"[...document.querySelectorAll('#kernels tbody tr')].map((r) => r.cells[{column}]"
                              ".textContent)"))
    assert shown == set(cells)
    assert_fits(page, 1280)
    assert errors == []


@pytest.mark.parametrize("width", [1280, 1920])
def test_a_name_without_boundaries_still_fits(fx: Path, tmp_path: Path, browser: Any, variant: Any,
                                              width: int) -> None:
    """A 400-character name with nowhere to divide is cut inside its one word, not across the page."""
    src = variant(fx / "gemm_bf16-raw.csv", tmp_path / "flat.csv", "k" * 400 + "{i}", copies=2)
    out = tmp_path / "flat.html"
    assert main(["report", str(src), str(fx / "decode_gemm.ncu-rep"), "--out", str(out)]) == 0
    errors: list[str] = []
    page = open_page(browser, out, errors, width)
    scroll, client = page.evaluate(WIDTH_JS)
    assert scroll <= client == width and errors == []
