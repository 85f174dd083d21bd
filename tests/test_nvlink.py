"""A collective is judged against the link it uses (issue 23, CPU side): the NVLink ceiling per
device, the NVLink figure from ncu's counters (absent, not 0, on a GPU with no link), and the
verdict that holds an NCCL kernel to it. The only real reports are one-GPU H200 captures (no link):
a measured NVLink figure is the seam test below, built from a real launch's counters."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

import kernelscope
from kernelscope import catalogue as C
from kernelscope.analysis.derive import derive
from kernelscope.analysis.verdict import assess, roof_pct
from kernelscope.ceilings import load as load_ceilings
from kernelscope.cli import main
from kernelscope.columns import kernel_object
from kernelscope.errors import InputError
from kernelscope.model import Assessment, KernelRecord, RawKernel
from kernelscope.report.kernels import roof_name

NCCL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"
NCCL_FULL = f"{NCCL}(ncclDevKernelArgsStorage<(unsigned long)4096>)"


def as_collective(rec: KernelRecord) -> KernelRecord:
    """A real launch's figures under an NCCL kernel's name (category NCCL)."""
    return replace(rec, name=NCCL, name_full=NCCL_FULL, code_file=None)


def test_nvlink_ceilings_load_with_their_source(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """900 GB/s on H100/H200 SXM and 1.8 TB/s on Blackwell, both directions' total (half each way),
    each with the datasheet figure it is from; a link a file does not list is unknown, not 0."""
    devices = load_ceilings().devices
    h200 = devices["h200-sxm"].link("nvlink")
    assert (h200.key, h200.tbps, h200.bidirectional, h200.both_ways_tbps, h200.each_way_tbps) == \
        ("h200-sxm.links.nvlink", 0.9, True, 0.9, 0.45)
    assert "NVLink: 900GB/s" in h200.source and "450 GB/s each way" in h200.direction_source
    assert devices["h100-sxm"].link("nvlink").tbps == 0.9
    assert {k: devices[k].link("nvlink").tbps for k in ("b200", "b300", "gb300")} == \
        {"b200": 1.8, "b300": 1.8, "gb300": 1.8}
    assert "1.8TB/s bidirectional" in devices["b200"].link("nvlink").direction_source
    assert devices["h200-sxm"].link("pcie").tbps is None
    assert main(["ceilings", "list", "--format", "json"]) == 0
    rows = {r["key"]: r for r in json.loads(capsys.readouterr().out)["ceilings"]}
    assert rows["h200-sxm.links.nvlink"]["value"] == 0.9
    assert rows["h200-sxm.links.nvlink"]["unit"] == "TB/s rx+tx"
    assert rows["h200-sxm.links.nvlink"]["clock_mhz"] is None  # a link's rate is its own
    bad = tmp_path / "ceilings.yaml"
    bad.write_text("devices:\n  x:\n    memory: {hbm: {tbps: 1}}\n    compute: {}\n"
                   "    links: {nvlink: {tbps: 0.9}}\n")
    with pytest.raises(InputError, match=r"ceilings.yaml.*x\.links\.nvlink\.bidirectional must be true"):
        load_ceilings(bad)


def test_one_h200_full_set_report_has_no_nvlink_figure(sets_dir: Path) -> None:
    """--set full on a lone H200 holds nvlrx/nvltx at 0 B/s and nvlink__count_logical 0: the figure
    does not apply (null, not unmeasured), and a collective's verdict says so and what to capture,
    instead of an HBM verdict. Our roofline list has no NVLink counters: the same, from the link count."""
    for report in ("full-torch.ncu-rep", "ks_roofline-torch.ncu-rep"):
        items, _ = kernelscope.analyze(str(sets_dir / report))
        for a in items:
            rec = a.record
            assert rec.metrics[C.NVL_LINKS] == 0
            assert rec.nvlink_bytes_per_s is None and "nvlink_bytes_per_s" not in rec.unmeasured
            assert kernel_object(a)["nvlink_bytes_per_s"] is None
    (gemm, *_), _ = kernelscope.analyze(str(sets_dir / "full-torch.ncu-rep"))
    assert (gemm.record.metrics[C.NVL_RX], gemm.record.metrics[C.NVL_TX]) == (0, 0)
    judged = assess(as_collective(gemm.record), load_ceilings().devices["h200-sxm"])
    assert judged.bound == "unmeasured" and roof_pct(judged) is None
    assert "no NVLink on this device (nvlink__count_logical 0)" in judged.verdict
    assert "--add nvlink (or ncu --set full) on a machine whose GPUs reach its peers over NVLink" in judged.verdict
    assert "HBM" not in judged.verdict
    assert [lv.rule for lv in judged.next_levers] == ["shrink-communication"]


def test_collective_captured_without_nvlink_counters_on_a_linked_gpu(sets_dir: Path) -> None:
    """A GPU with links but a capture without the counters (our roofline list): unmeasured, and the
    verdict names the counters and the add-on."""
    (a, *_), _ = kernelscope.analyze(str(sets_dir / "ks_roofline-torch.ncu-rep"))
    rec = derive(replace(_raw(a), metrics={**a.record.metrics, C.NVL_LINKS: 18.0}))
    assert rec.nvlink_bytes_per_s is None and "nvlink_bytes_per_s" in rec.unmeasured
    judged = assess(as_collective(rec), load_ceilings().devices["h200-sxm"])
    assert judged.bound == "unmeasured"
    assert f"NVLink traffic not collected ({C.NVL_RX}, {C.NVL_TX})" in judged.verdict


def _raw(a: Assessment) -> RawKernel:
    """The launch as its reader found it, to derive again with counters set."""
    r = a.record
    return RawKernel(r.source, r.launch_id, r.name, r.name_full, r.device, r.grid, r.block, r.metrics, r.ncu_rules,
                     (), r.code_file)


@pytest.fixture(scope="module")
def linked(sets_dir: Path) -> KernelRecord:
    """SEAM, not a measurement: no two-GPU report exists. The real --set full launch's counters with
    18 links and NVLink traffic set here (rx 330 GB/s, tx 300 GB/s), derived by the real catalogue."""
    (a, *_), _ = kernelscope.analyze(str(sets_dir / "full-torch.ncu-rep"))
    metrics = {**a.record.metrics, C.NVL_LINKS: 18.0, C.NVL_RX: 330e9, C.NVL_TX: 300e9}
    return as_collective(derive(replace(_raw(a), metrics=metrics)))


def test_seam_no_two_gpu_report_nccl_kernel_is_held_to_the_nvlink_roof(linked: KernelRecord) -> None:
    """rx 330 GB/s, tx 300 GB/s on the H200's 900 GB/s both ways: the busier way, 330 GB/s, is 73 %
    of 450 GB/s each way, no clock scaling, with the figures that decided it; the GEMM's own HBM and
    FLOP figures play no part."""
    assert linked.nvlink_bytes_per_s == pytest.approx(630e9)
    assert linked.nvlink_busier_way_bytes_per_s == pytest.approx(330e9)
    judged = assess(linked, load_ceilings().devices["h200-sxm"])
    lim = judged.limiter
    assert (lim.kind, lim.key, roof_name(lim), lim.clock_hz) == ("nvlink", "h200-sxm.links.nvlink", "NVLink", None)
    assert lim.pct == pytest.approx(100 * 330 / 450) and lim.pct_datasheet == pytest.approx(100 * 330 / 450)
    assert roof_pct(judged) == pytest.approx(73.3, abs=0.05) and judged.bound == "memory"
    assert judged.verdict.startswith("memory-bound near the NVLink roof: 73 % of it (the link's own rate")
    assert judged.evidence[0].startswith("NVLink 630.0 GB/s received + sent (nvlrx__bytes.sum.per_second + "
                                         "nvltx__bytes.sum.per_second), the busier way 330.0 GB/s = 73 % of "
                                         "450 GB/s each way (h200-sxm.links.nvlink: 900 GB/s both directions")
    assert judged.runner_up is None and not any("HBM" in e for e in judged.evidence)
    assert kernel_object(judged)["ceiling_key"] == "h200-sxm.links.nvlink"
    assert judged.provenance.family == "NCCL"
    assert [lv.rule for lv in judged.next_levers] == ["shrink-communication"]
    assert any("held to the NVLink roof, not this GPU's HBM or FLOP roofs" in s for s in judged.limiters)


def test_seam_no_two_gpu_report_collective_under_its_link_is_latency(linked: KernelRecord) -> None:
    """100 GB/s the busier way is 22 % of 450 GB/s: latency-bound, the NVLink roof the nearest; a
    send-only collective at 400 GB/s one way is at its roof (89 %), which rx + tx over both ways
    (44 %) would miss; with no sourced ceiling the figure stands but no % is made up."""
    dev = load_ceilings().devices["h200-sxm"]
    slow = assess(replace(linked, nvlink_bytes_per_s=200e9, nvlink_busier_way_bytes_per_s=100e9), dev)
    assert slow.bound == "latency" and slow.runner_up is not None and slow.runner_up.kind == "nvlink"
    assert roof_pct(slow) == pytest.approx(100 * 100 / 450)
    assert slow.verdict == "latency-bound: no roof reaches 60 %; nearest roof: NVLink roof 22 %"
    sends = assess(replace(linked, nvlink_bytes_per_s=400e9, nvlink_busier_way_bytes_per_s=400e9), dev)
    assert sends.bound == "memory" and roof_pct(sends) == pytest.approx(100 * 400 / 450)  # one way full: at its roof
    unsourced = replace(dev, links={})
    judged = assess(linked, unsourced)
    assert judged.bound == "unmeasured" and roof_pct(judged) is None
    assert "NVLink 630.0 GB/s received + sent, but h200-sxm.links.nvlink is not sourced" in judged.verdict
