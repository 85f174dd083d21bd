"""The HTML report in a real headless Chromium at 1280 px: loads offline with no console errors,
the frontier is above the fold, nothing scrolls sideways, the roofline answers hover and click,
stall bars carry their shares; and hostile names, ceilings keys and titles run no script."""

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


def open_page(browser: Any, path: Path, errors: list[str]) -> Any:
    page = browser.new_page(viewport={"width": 1280, "height": 800})
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
