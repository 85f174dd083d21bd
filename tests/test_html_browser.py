"""The HTML report in a real headless Chromium: loads offline with no console errors, the
roofline is drawn and answers hover, the table has one row a kernel; and a screenshot check."""

from __future__ import annotations

from pathlib import Path

import matplotlib.image
import pytest

from kernelscope.cli import main

playwright = pytest.importorskip("playwright.sync_api")

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-quic"]


def test_report_in_chromium(fx: Path, tmp_path: Path, chromium: str) -> None:
    out = tmp_path / "report.html"
    names = ["bundle_attn_causal", "gemm_basic.ncu-rep", "decode_gemm.ncu-rep", "divergent.ncu-rep",
             "fp8_gemm.ncu-rep"]
    assert main(["report", *[str(fx / n) for n in names], "--out", str(out)]) == 0
    shot = tmp_path / "report.png"
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        errors: list[str] = []
        requests: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("request", lambda r: requests.append(r.url))
        page.goto(out.as_uri())
        page.wait_for_load_state("load")
        assert errors == []
        assert all(u.startswith(("file:", "data:")) for u in requests), requests  # nothing from the network
        assert page.locator("#kernels tbody tr").count() == len(names)
        markers = page.locator("#roofline g[id^=kernel-]")
        assert markers.count() == len(names)
        assert page.locator("#roofline svg path").count() > 20  # roofs, axes and markers were drawn
        page.locator("#roofline").scroll_into_view_if_needed()
        box = page.locator("g#kernel-1").bounding_box()
        assert box is not None
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        tip = page.locator("#tip")
        assert tip.is_visible() and "AI unmeasured" in tip.inner_text() and "SM busy 93 %" in tip.inner_text()
        page.screenshot(path=str(shot))
        browser.close()
    pixels = matplotlib.image.imread(str(shot))
    assert pixels.shape[:2] == (1000, 1400)
    assert pixels[..., :3].std() > 0.05  # a rendered page, not a blank one
