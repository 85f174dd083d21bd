"""The HTML report: one self-contained file (inline SVG, CSS and script; nothing fetched at view
time) with the context header, kernel table, interactive roofline, occupancy, warp-stall chart,
verdicts and the next-lever frontier."""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence

from ..analysis.frontier import frontier
from ..columns import BY_NAME, kernel_object
from ..model import Assessment
from .roofline_data import RooflineData
from .roofline_plot import render

STALL_COLOURS = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#9c755f")

CSS = """
body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1400px}
h1{font-size:20px}h2{font-size:16px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ddd;padding:3px 6px;text-align:left}
th{background:#f4f4f4}td.num{text-align:right;font-variant-numeric:tabular-nums}
.ctx td:first-child{font-weight:600;width:140px}.unknown{color:#999}
#tip{position:fixed;display:none;background:#fff;border:1px solid #888;padding:6px;font-size:12px;
box-shadow:2px 2px 6px #0003;pointer-events:none;z-index:9}
.bar{display:flex;height:16px;width:600px;border:1px solid #ccc}.bar span{display:block;height:100%}
.legend span{display:inline-block;width:10px;height:10px;margin:0 4px 0 10px}
#roofline g[id^=kernel-] path{pointer-events:all}
.lever{margin:2px 0 2px 16px;font-size:13px}.small{font-size:12px;color:#555}
"""

SCRIPT = """
const points = JSON.parse(document.getElementById('points').textContent);
const tip = document.getElementById('tip');
points.forEach((p, i) => {
  const g = document.getElementById('kernel-' + i);
  if (!g) { return; }
  g.style.cursor = 'pointer';
  g.addEventListener('mousemove', (e) => {
    tip.innerHTML = Object.entries(p).map(([k, v]) => '<b>' + k + '</b>: ' + v).join('<br>');
    tip.style.left = (e.clientX + 14) + 'px'; tip.style.top = (e.clientY + 14) + 'px';
    tip.style.display = 'block';
  });
  g.addEventListener('mouseleave', () => { tip.style.display = 'none'; });
});
"""


def _e(value: object) -> str:
    return html.escape(str(value))


def _n(value: float | None, spec: str) -> str:
    return "—" if value is None else format(value, spec)


def _context(ctx: Mapping[str, str]) -> str:
    rows = "".join(
        f"<tr><td>{_e(k.replace('_', ' '))}</td><td class='{'unknown' if v == 'unknown' else ''}'>{_e(v)}</td></tr>"
        for k, v in ctx.items())
    return f"<table class='ctx'>{rows}</table>"


# (column, heading, format, scale): the kernel table, by the names of the one column spec
TABLE: tuple[tuple[str, str, str, float], ...] = (
    ("name", "kernel", "", 1), ("category", "category", "", 1), ("duration_ns", "time µs", ".1f", 1e-3),
    ("bound", "bound", "", 1), ("pct_sol_compute", "%SoL compute", ".1f", 1),
    ("compute_ceiling_key", "compute ceiling", "", 1), ("pct_sol_memory", "%SoL memory", ".1f", 1),
    ("arithmetic_intensity", "FLOP/B", ".1f", 1), ("achieved_tflops", "TFLOP/s", ".1f", 1),
    ("achieved_dram_tbps", "TB/s", ".2f", 1), ("sm_busy_pct", "SM busy %", ".0f", 1),
    ("achieved_occupancy_pct", "occupancy % achieved", ".0f", 1),
    ("theoretical_occupancy_pct", "occupancy % theoretical", ".0f", 1),
    ("occupancy_limiter", "limiter", "", 1), ("registers_per_thread", "regs/thread", ".0f", 1),
    ("shared_mem_per_block_bytes", "smem/block KiB", ".1f", 1 / 1024), ("waves_per_sm", "waves/SM", ".2f", 1),
)


def _cell(value: object, spec: str, scale: float) -> str:
    if value is None:
        return "—"
    if spec and isinstance(value, (int, float)):
        return format(value * scale, spec)
    return _e(value)


def _kernel_table(items: Sequence[Assessment]) -> str:
    total = sum(a.record.duration_ns or 0 for a in items) or 1.0
    head = "".join(f"<th title='{_e(BY_NAME[c].unit)}'>{_e(h)}</th>" for c, h, _, _ in TABLE)
    rows = []
    for i, a in enumerate(items):
        obj = kernel_object(a)
        cells = [f"<td class='num'>{i}</td>"]
        cells += [f"<td class='num'>{_cell(obj[c], f, k)}</td>" if f else f"<td>{_cell(obj[c], f, k)}</td>"
                  for c, _, f, k in TABLE]
        cells.insert(4, f"<td class='num'>{100 * (a.record.duration_ns or 0) / total:.1f}</td>")
        rows.append("<tr class='kernel-row'>" + "".join(cells) + "</tr>")
    heads = "<th>#</th>" + head
    heads = heads.replace("<th title='ns'>time µs</th>", "<th title='ns'>time µs</th><th>time %</th>", 1)
    return ("<table id='kernels'><thead><tr>" + heads + "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>")


def _stalls(items: Sequence[Assessment]) -> str:
    reasons: list[str] = []
    for a in items:
        for reason in list(a.record.warp_stalls or {})[:6]:
            if reason not in reasons:
                reasons.append(reason)
    reasons = reasons[: len(STALL_COLOURS) - 1]
    colour = {r: STALL_COLOURS[i] for i, r in enumerate(reasons)}
    rows = []
    for a in items:
        stalls = a.record.warp_stalls
        if stalls is None:
            rows.append(f"<tr><td>{_e(a.record.name)}</td><td class='unknown'>stalls not collected "
                        "(capture with --add stalls or --set full)</td></tr>")
            continue
        other = 100.0 - sum(v for k, v in stalls.items() if k in colour)
        segs = "".join(f"<span title='{_e(k)} {v:.1f} %' style='width:{v:.2f}%;background:{colour[k]}'></span>"
                       for k, v in stalls.items() if k in colour)
        segs += f"<span title='other {other:.1f} %' style='width:{max(other, 0):.2f}%;background:#ccc'></span>"
        rows.append(f"<tr><td>{_e(a.record.name)}</td><td><div class='bar'>{segs}</div></td></tr>")
    legend = "".join(f"<span style='background:{c}'></span>{_e(r)}" for r, c in colour.items())
    return (f"<p class='legend small'>{legend}<span style='background:#ccc'></span>other</p>"
            f"<table id='stalls'>{''.join(rows)}</table><p class='small'>share of stalled warp-cycles per "
            "reason (smsp__average_warps_issue_stalled_*_per_issue_active), excluding the issuing warp</p>")


def _verdicts(items: Sequence[Assessment]) -> str:
    parts = []
    for i, a in enumerate(items):
        r = a.record
        lines = "".join(f"<li>{_e(x)}</li>" for x in a.limiters)
        levers = "".join(
            f"<div class='lever'>{k}. <b>{_e(lv.rule)}</b>: {_e(lv.action)}<br><span class='small'>expect: "
            f"{_e(lv.expected)}; confirm: {_e(lv.confirm)}</span></div>" for k, lv in enumerate(a.next_levers, 1))
        unmeasured = f"<p class='small'>unmeasured: {_e(', '.join(r.unmeasured))}</p>" if r.unmeasured else ""
        parts.append(f"<h3 id='v{i}'>{i}. {_e(r.name)}</h3><p>{_e(a.verdict)} <span class='small'>(ceilings "
                     f"{_e(a.compute_ceiling_key or '—')}, {_e(a.memory_ceiling_key)})</span></p>"
                     f"<ul>{lines}</ul>{levers}{unmeasured}")
    return "".join(parts)


def render_html(items: Sequence[Assessment], data: RooflineData, ctx: Mapping[str, str], title: str) -> str:
    svg = render(data, title, "svg").decode()
    svg = svg[svg.index("<svg"):]
    points = json.dumps([p.details for p in data.points]).replace("</", "<\\/")
    frontier_rows = "".join(
        f"<tr><td class='num'>{f.score:.2f}</td><td>{_e(f.kernel)}</td><td>{_e(f.rule)}: {_e(f.action)}</td>"
        f"<td>{_e(f.expected)}</td><td>{_e(f.confirm)}</td></tr>" for f in frontier(items)[:15])
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title><style>{CSS}</style></head>
<body><h1>{_e(title)}</h1>
<h2>Context</h2>{_context(ctx)}
<h2>Kernels ({len(items)})</h2>{_kernel_table(items)}
<h2>Roofline</h2><p class="small">hover a marker for its figures; hollow markers: arithmetic intensity
not measured, placed by SM busy against their family's ceiling</p><div id="roofline">{svg}</div>
<h2>Warp stalls</h2>{_stalls(items)}
<h2>Verdicts and next levers</h2>{_verdicts(items)}
<h2>Next-lever frontier</h2><p class="small">levers of all kernels, ranked by expected gain x time share / cost</p>
<table id="frontier"><tr><th>score</th><th>kernel</th><th>lever</th><th>expected</th><th>confirm by</th></tr>
{frontier_rows}</table>
<div id="tip"></div><script type="application/json" id="points">{points}</script><script>{SCRIPT}</script>
</body></html>
"""
