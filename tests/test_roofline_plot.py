"""The roofline as a figure to paste: numbers that do not overlap (matplotlib's own text boxes),
each kernel linked to its own precision's roof, a legend for roofs, ridges and sizes, whole-decade
log axes, literal text (no mathtext from names), and --out refusals as one-line errors."""

from __future__ import annotations

import os
from dataclasses import replace
from itertools import combinations
from pathlib import Path

import pytest
from matplotlib.collections import LineCollection

import kernelscope
from kernelscope.ceilings import load
from kernelscope.cli import main
from kernelscope.report import roofline_data, roofline_plot
from kernelscope.report.kernels import ranked

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


def test_eleven_real_kernels_numbered_apart_and_linked(fx: Path) -> None:
    items, _ = kernelscope.analyze([str(fx / n) for n in ELEVEN])
    d, data = drawn(items)
    assert sorted(d.labels) == list(range(1, 12))  # every kernel numbered: the table's rank
    assert_numbers_apart(d)
    fp8 = next(p for p in data.points if p.name.startswith("nvjet_sm90_qqtst"))
    assert fp8.roof == "h200-sxm.compute.fp8"
    links = [c for c in d.axes.collections if isinstance(c, LineCollection)]
    ends = {(round(seg[0][0], 3), round(seg[1][1], 1)) for c in links for seg in c.get_segments()}
    assert (round(fp8.ai, 3), 1979.0) in ends  # its dotted line reaches the fp8 roof, not the bf16 one
    legend = [t.get_text() for t in d.figure.legends[0].get_texts()]
    assert any(t.startswith("fp8 roof 1979 TFLOP/s, ridge 412 FLOP/B") for t in legend)
    assert "ridge: compute roof meets HBM roof" in legend and "marker size: >= 15 % of time" in legend
    roof_colours = {line.get_color() for line in d.axes.get_lines() if line.get_label().endswith("roof")}
    assert not roof_colours & {"#d62728", "#1f77b4", "#ff7f0e", "#7f7f7f"}  # never a verdict colour


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
    key = next(t for t in d.figure.texts if "kernel (share of time)" in t.get_text())
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
