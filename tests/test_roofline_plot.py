"""The roofline as a figure to paste: numbers that do not overlap (matplotlib's own text boxes),
each kernel linked to the roof its verdict reads (precision, tensor path, clock), roof colours by
precision whatever else is drawn, a key in which no two kernels read alike, whole-decade log axes,
literal text (no mathtext from names), and --out refusals as one-line errors."""

from __future__ import annotations

import os
from dataclasses import replace
from itertools import combinations
from pathlib import Path

import pytest
from matplotlib.collections import LineCollection
from matplotlib.lines import Line2D

import kernelscope
from kernelscope.analysis.verdict import roof_pct, verdict_roof
from kernelscope.ceilings import load
from kernelscope.cli import main
from kernelscope.report import roofline_data, roofline_plot
from kernelscope.report.kernels import origin_labels, ranked
from kernelscope.report.safe_text import elide
from kernelscope.report.style import roof_colour

MANY = Path(__file__).parents[1] / "bench" / "data" / "many.ncu-rep.gz"  # 300 launches of small kernels
ELEVEN = ("bundle_attn_causal", "gemm_basic.ncu-rep", "decode_gemm.ncu-rep", "divergent.ncu-rep",
          "fp8_gemm.ncu-rep", "gemm_bf16.ncu-rep", "attention_cudnn.ncu-rep", "softmax.ncu-rep.gz",
          "tiny.ncu-rep.gz", "randn.ncu-rep.gz", "nobranch.ncu-rep")


def drawn(items: list[kernelscope.Assessment]) -> tuple[roofline_plot.Drawn, roofline_data.RooflineData]:
    data = roofline_data.build(ranked(items), load())
    with roofline_plot._literal_text():
        return roofline_plot.draw(data, "title", "subtitle"), data


def assert_numbers_apart(d: roofline_plot.Drawn) -> None:
    renderer = d.figure.canvas.get_renderer()  # type: ignore[attr-defined]
    frame = d.axes.get_window_extent(renderer)
    boxes = {rank: roofline_plot.label_box(a, renderer) for rank, a in d.labels.items()}
    for (r1, b1), (r2, b2) in combinations(boxes.items(), 2):
        assert not b1.overlaps(b2), f"numbers {r1} and {r2} overlap"
    for b in boxes.values():
        assert frame.x0 <= b.x0 and b.x1 <= frame.x1 and frame.y0 <= b.y0 and b.y1 <= frame.y1


def roof_lines(d: roofline_plot.Drawn) -> dict[str, list[Line2D]]:
    """The axes' roof lines by ceiling key (the band's edges of one roof under one key)."""
    out: dict[str, list[Line2D]] = {}
    for line in d.axes.get_lines():
        if (gid := line.get_gid() or "").startswith("roof-"):
            out.setdefault(gid.removeprefix("roof-"), []).append(line)
    return out


def link_ends(d: roofline_plot.Drawn) -> set[tuple[float, float]]:
    """Where each dotted link from a numbered kernel ends: (its AI, the roof figure it reaches)."""
    links = [c for c in d.axes.collections if isinstance(c, LineCollection)]
    return {(round(seg[0][0], 3), round(seg[1][1], 1)) for c in links for seg in c.get_segments()}


def legend_texts(d: roofline_plot.Drawn) -> list[str]:
    return [t.get_text() for leg in d.figure.legends for t in leg.get_texts()]


def test_eleven_real_kernels_numbered_apart_and_linked(fx: Path) -> None:
    items, _ = kernelscope.analyze([str(fx / n) for n in ELEVEN])
    d, data = drawn(items)
    assert sorted(d.labels) == list(range(1, 12))  # every kernel numbered: the table's rank
    assert_numbers_apart(d)
    fp8 = next(p for p in data.points if p.name.startswith("nvjet_sm90_qqtst"))
    assert fp8.roof == "h200-sxm.compute.fp8@wgmma"
    clock = next(a.record.sm_clock_hz for a in items if a.record.name.startswith("nvjet_sm90_qqtst"))
    assert fp8.roof_tflops == pytest.approx(1979 * clock / 1.83e9)  # the fp8 peak at the clock it ran at: 1861
    assert round(fp8.roof_tflops) == 1861
    assert (round(fp8.ai, 3), round(fp8.roof_tflops, 1)) in link_ends(d)  # it reaches the fp8 roof, not bf16's
    assert "fp8 (wgmma) roof 1861 TFLOP/s, ridge 388 FLOP/B\n= 1979 at 1721 MHz (its kernel's clock)" in legend_texts(d)
    assert "ridge: compute roof meets HBM roof" in legend_texts(d)
    assert "size: >= 15 % of time" in legend_texts(d)
    colours = {line.get_color() for lines in roof_lines(d).values() for line in lines}
    assert not colours & {"#d62728", "#1f77b4", "#ff7f0e", "#7f7f7f"}  # never a verdict colour


def test_fa2_is_drawn_against_its_mma_sync_roof(fx: Path) -> None:
    """FlashAttention-2 runs on mma.sync, which reaches 0.667 of the wgmma peak: the plot draws that
    roof at the clock the kernel ran at (the verdict's 636 TFLOP/s), not the 989 TFLOP/s datasheet
    bf16 peak, and the point sits at the verdict's 54 % of it."""
    items, table = kernelscope.analyze(str(fx / "attention_fa2.ncu-rep.gz"))
    a = items[0]
    assert roof_pct(a) == pytest.approx(53.9, abs=0.05) and verdict_roof(a).key == "h200-sxm.compute.bf16@mma.sync"
    d, data = drawn(items)
    (roof,) = data.roofs
    expected = 989 * a.record.sm_clock_hz / 1.83e9 * table.devices["h200-sxm"].tensor_paths["mma.sync"].ratio
    assert roof.key == "h200-sxm.compute.bf16@mma.sync" and roof.hi == pytest.approx(expected)
    assert round(roof.hi) == 636 and roof.lo == roof.hi  # one kernel, one clock: a line, not a band
    (point,) = data.points
    assert round(100 * point.tflops / roof.hi) == round(roof_pct(a)) == 54  # was 35 % of the 989 roof
    lines = roof_lines(d)
    assert set(lines) == {"h200-sxm.memory.hbm", "h200-sxm.compute.bf16@mma.sync"}  # no 989 TFLOP/s line
    (line,) = lines["h200-sxm.compute.bf16@mma.sync"]
    assert set(line.get_ydata()) == {roof.hi} and line.get_linestyle() == "--"  # dashed: below the chip's peak
    assert (round(point.ai, 3), 635.8) in link_ends(d)
    label = "bf16 (mma.sync) roof 636 TFLOP/s, ridge 133 FLOP/B\n= 989 × 0.67 at 1764 MHz (its kernel's clock)"
    assert label in legend_texts(d)
    assert point.details["roof"] == "verdict's roof: tensor bf16 (mma.sync) 54 %"
    assert point.details["drawn roof"] == ("drawn roof: bf16 (mma.sync) 636 TFLOP/s at 1764 MHz; its tensor_bf16 work "
                                           "at 54 % of it")


def test_one_roof_at_several_clocks_is_a_band(fx: Path) -> None:
    """Three bf16 wgmma kernels ran at 1610, 1678 and 1744 MHz: their roof is drawn from the lowest
    figure any is held to to the highest, each kernel's link ending at its own."""
    names = ("gemm_bf16.ncu-rep", "attention_cudnn.ncu-rep", "decode_gemm.ncu-rep")
    items, _ = kernelscope.analyze([str(fx / n) for n in names])
    d, data = drawn(items)
    (roof,) = data.roofs
    figures = sorted(989 * a.record.sm_clock_hz / 1.83e9 for a in items)
    assert roof.key == "h200-sxm.compute.bf16@wgmma" and [f for f, _ in roof.held] == pytest.approx(figures)
    assert [round(f) for f in figures] == [870, 907, 943]
    assert sorted(line.get_ydata()[0] for line in roof_lines(d)[roof.key]) == pytest.approx([870.1, 942.6], abs=0.1)
    assert any(c.get_gid() == f"band-{roof.key}" for c in d.axes.collections)
    assert any(t.startswith("bf16 (wgmma) roof 870–943 TFLOP/s") and "at 1610–1744 MHz (its kernels' clocks)" in t
               for t in legend_texts(d))
    gemm = next(p for p in data.points if p.name.startswith("nvjet_sm90_tst_256"))
    assert (round(gemm.ai, 3), 870.1) in link_ends(d)  # the GEMM at 1610 MHz reaches the band's bottom


def test_a_roofs_colour_is_its_precisions_in_every_plot(fx: Path) -> None:
    """Not the order roofs happen to be drawn in: fp32 and bf16 keep their colours whatever else the
    plot holds."""
    def colours(*names: str) -> dict[str, str]:
        items, _ = kernelscope.analyze([str(fx / n) for n in names])
        d, _ = drawn(items)
        return {key: lines[0].get_color() for key, lines in roof_lines(d).items()}

    one = colours("divergent.ncu-rep", "attention_fa2.ncu-rep.gz")
    two = colours("fp8_gemm.ncu-rep", "gemm_bf16.ncu-rep", "softmax.ncu-rep.gz", "attention_fa2.ncu-rep.gz")
    assert one["h200-sxm.compute.fp32"] == two["h200-sxm.compute.fp32"] == "#8c510a"
    assert one["h200-sxm.compute.bf16@mma.sync"] == two["h200-sxm.compute.bf16@wgmma"] == "#1b7837"
    assert two["h200-sxm.compute.fp8@wgmma"] == "#c51b7d"
    assert len({one["h200-sxm.memory.hbm"], *two.values()}) == 4  # the HBM slope, fp8, bf16 and fp32 apart
    assert roof_colour("h200-sxm.compute.fp6") == roof_colour("b300.compute.fp6")  # unlisted: by name, stably


def key_rows(d: roofline_plot.Drawn) -> list[str]:
    key = next(t for t in d.figure.texts if t.get_gid() == "key").get_text().split("\n")
    return [line for line in key if line[:2].strip().isdigit()]


def assert_inside_the_figure(d: roofline_plot.Drawn) -> None:
    renderer = d.figure.canvas.get_renderer()  # type: ignore[attr-defined]
    page = d.figure.bbox
    for artist in [*d.figure.texts, *d.figure.legends]:
        box = artist.get_window_extent(renderer)
        assert page.x0 <= box.x0 and box.x1 <= page.x1 and page.y0 <= box.y0 and box.y1 <= page.y1, artist


def test_the_key_tells_equal_names_apart(fx: Path) -> None:
    """Three reports of one GEMM (the same name) and the many-kernel report, whose kernels share a
    template and differ deep inside it: every row of the key reads differently, the input it came
    from beside its name, and the key stays inside the figure."""
    paths = [fx / n for n in ("g_rmin.ncu-rep", "gemm_basic.ncu-rep", "gemm_bf16.ncu-rep", "tiny.ncu-rep.gz",
                              "bundle_attn_causal", "attention_fa2.ncu-rep.gz")] + [MANY]
    items, _ = kernelscope.analyze([str(p) for p in paths])
    labels = origin_labels(paths, sorted({a.record.source for a in items}))  # as the CLI names inputs
    data = roofline_data.build(ranked(items), load(), labels=labels)
    with roofline_plot._literal_text():
        d = roofline_plot.draw(data, "title")
    rows = key_rows(d)
    assert len(rows) == len(data.points) == 9 and data.no_flops == (3,)
    assert len({r[3:] for r in rows}) == len(rows)  # no two read alike
    gemms = [r for r in rows if "coopA_NNT" in r]
    assert [r.split()[2] for r in gemms] == ["g_rmin", "gemm_basic", "gemm_bf16"]  # ranked by time
    assert any("flash_fwd_kernel<…(bool)0…>" in r and "attention_fa2" in r for r in rows)
    bundle = elide("bundle_attn_causal", roofline_plot.KEY_ORIGIN)  # an input's name is cut to fit as well
    assert any("flash_fwd_kernel<…(bool)1…>" in r and bundle in r for r in rows)
    elementwise = [r.split()[1:3] for r in rows if "vectorized" in r]
    assert len(elementwise) == 3 and {w for _, w in elementwise} == {"many", "tiny"}
    assert len({n for n, _ in elementwise}) == 2  # many's two differ deep in the template; tiny's is one of them
    assert all(len(r) <= roofline_plot.KEY_WIDTH for r in rows)
    assert_inside_the_figure(d)


def test_key_names_cut_where_they_differ() -> None:
    a = "vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1>>"
    b = "vectorized_elementwise_kernel<4, at::native::FillFunctor<double>, std::array<char*, 1>>"
    assert elide(a, 30) == elide(b, 30)  # cut in the middle, the two read alike...
    ka, kb = roofline_plot.key_names([a, b], 30)
    assert ka != kb and len(ka) <= 30 and len(kb) <= 30  # ...so they are cut around where they differ
    assert "float" in ka and "double" in kb and ka.startswith("vectorized")
    assert roofline_plot.key_names(["short", "short"], 30) == ["short", "short"]  # one kernel per launch


def test_per_launch_key_names_each_launch(fx: Path) -> None:
    items, _ = kernelscope.analyze(str(MANY))
    data = roofline_data.build(ranked(items, per_launch=True), load())
    with roofline_plot._literal_text():
        d = roofline_plot.draw(data, "title")
    rows = key_rows(d)
    launches = [p.launch for p in data.points[:len(rows)]]
    assert all(isinstance(n, int) for n in launches)
    assert [f"launch {n}" in r for n, r in zip(launches, rows, strict=True)] == [True] * len(rows)
    assert_inside_the_figure(d)


def test_crowded_kernels_never_overlap(fx: Path) -> None:
    """Twenty kernels at nearly one point: numbers spread out or are left to the key, never stacked."""
    items, _ = kernelscope.analyze(str(fx / "decode_gemm.ncu-rep"))
    a = items[0]
    crowd = [replace(a, record=replace(a.record, name=f"k{i}", name_full=f"k{i}", launch_id=i,
                                       arithmetic_intensity=a.record.arithmetic_intensity * (1 + i / 200),
                                       duration_ns=a.record.duration_ns * (1 + i / 50))) for i in range(20)]
    d, _ = drawn(crowd)
    assert len(d.labels) >= 8
    assert_numbers_apart(d)


def test_log_axes_span_whole_decades(fx: Path) -> None:
    items, _ = kernelscope.analyze(str(fx / "bundle_attn_causal"))
    d, _ = drawn(items)
    for lo, hi in (d.axes.get_xlim(), d.axes.get_ylim()):
        assert hi / lo >= 1e3 and float(f"{lo:g}") == 10 ** round(__import__("math").log10(lo))
    ticks = [t.get_text() for t in d.axes.get_yticklabels() if t.get_text()]
    assert len(ticks) >= 4 and all("$" not in t for t in ticks)


@pytest.mark.parametrize("name", [r"$\alpha$_{x}", r"a$\frac{$b", "$$", "k^2_{ij}$"])
def test_names_are_not_mathtext(fx: Path, name: str) -> None:
    items, _ = kernelscope.analyze(str(fx / "decode_gemm.ncu-rep"))
    item = replace(items[0], record=replace(items[0].record, name=name))
    data = roofline_data.build(ranked([item]), load())
    assert roofline_plot.render(data, f"title {name}", "png").startswith(b"\x89PNG")  # a parse would raise
    d, _ = drawn([item])
    key = next(t for t in d.figure.texts if t.get_gid() == "key")
    assert name in key.get_text() and not key.get_parse_math()


@pytest.mark.parametrize("out,problem", [
    ("/dev/null", "not a regular file"), ("roofline.jpg", "written as .png, .svg or .pdf"),
    ("plots/", "names a directory"),
])
def test_out_refusals(fx: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], out: str, problem: str) -> None:
    target = out if out.startswith("/") else str(tmp_path / out) + ("/" if out.endswith("/") else "")
    assert main(["roofline", str(fx / "decode_gemm.ncu-rep"), "--out", target]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and problem in err and os.path.exists("/dev/null")


def test_out_into_a_read_only_directory(fx: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o500)
    if os.access(ro, os.W_OK):  # root writes anywhere mode bits allow nothing: take sysfs, read-only to all
        ro = Path("/sys")
    assert main(["roofline", str(fx / "decode_gemm.ncu-rep"), "--out", str(ro / "r.png")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot write output" in err


def test_out_onto_an_existing_directory(fx: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "r.png").mkdir()
    assert main(["roofline", str(fx / "decode_gemm.ncu-rep"), "--out", str(tmp_path / "r.png")]) == 2
    assert "is a directory" in capsys.readouterr().err
    assert main(["report", str(fx / "decode_gemm.ncu-rep"), "--out", str(tmp_path / "r.txt")]) == 2
    assert "ending in .html" in capsys.readouterr().err
