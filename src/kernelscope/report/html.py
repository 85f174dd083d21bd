"""The HTML report: one self-contained file (inline SVG, CSS and script; nothing fetched at view
time), ordered by what a reader needs first: the verdict mix and the next levers, then the kernel
table (one row a kernel, the same ranks as the terminal and the roofline), the full-width roofline
with hover, warp stalls, each kernel's verdict and, last, the full capture context.

Every string from a report, a ceilings file or a campaign config is escaped on the way in; the
script only ever sets `textContent`, so no name can become markup or code. Large inputs stay
small: the table, stall bars and verdicts cover the kernels with the most time, and say how many
more there are (every kernel is still a point on the roofline, with hover).
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..columns import unmeasured_of
from .kernels import Ranked, bound_cell, judgement, kernel_frontier, total_time
from .kernels import table as kernel_table
from .roofline_data import RooflineData, origins
from .roofline_plot import render_svg
from .safe_text import clean
from .style import BOUND_ANSI, BOUND_COLOUR, stall_colour
from .table import Table, cell

TABLE_ROWS = 1000
STALL_ROWS = 40
VERDICTS = 40
FRONTIER_ROWS = 8


def _css() -> str:
    bounds = "".join(f".c-{BOUND_ANSI[b]}{{background:{c}26;box-shadow:inset 3px 0 {c}}}"
                     f".mix .b-{b}{{background:{c}}}" for b, c in BOUND_COLOUR.items())
    return """
*{box-sizing:border-box}body{font-family:system-ui,sans-serif;margin:0 auto;padding:16px 24px;color:#222;
max-width:1600px;font-size:14px;line-height:1.4}
h1{font-size:20px;margin:0 0 2px}h2{font-size:16px;margin:26px 0 8px;border-bottom:1px solid #ddd}
.sub{color:#555;margin:0 0 10px;overflow-wrap:anywhere}a{color:#1a5fb4}
table{border-collapse:collapse;font-size:12.5px;width:100%}td,th{border:1px solid #e2e2e2;padding:3px 6px;
text-align:left;vertical-align:top}th{background:#f4f4f4;position:sticky;top:0;z-index:2}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}td.num{white-space:nowrap}
td.name{overflow-wrap:anywhere;font-family:ui-monospace,monospace;font-size:12px;min-width:8em}
td.kernel{min-width:16em}
.unknown{color:#999}.mix{display:flex;height:22px;border-radius:3px;overflow:hidden;margin:4px 0}
.mix span,.bar span{display:block;height:100%;color:#fff;font-size:11px;line-height:20px;overflow:hidden;
white-space:nowrap;text-align:center}.bar{display:flex;height:20px;border:1px solid #ccc;min-width:300px}
#tip{position:fixed;display:none;background:#fff;border:1px solid #888;padding:6px 8px;font-size:12px;
white-space:pre-line;box-shadow:2px 2px 6px #0003;pointer-events:none;z-index:9;max-width:520px;
overflow-wrap:anywhere}
#roofline svg{width:100%;height:auto;display:block}.legend span{display:inline-block;width:10px;height:10px;
margin:0 4px 0 12px;vertical-align:middle}.legend{font-size:12px}
details{margin:6px 0;border:1px solid #e6e6e6;border-radius:4px;padding:4px 10px}
summary{cursor:pointer;overflow-wrap:anywhere}ul.stands{font-size:12.5px;color:#333;overflow-wrap:anywhere}
.from{color:#666;font-family:system-ui,sans-serif;font-weight:normal}
.lever{margin:6px 0}.lever b{color:#111}.note{color:#555;font-size:12.5px}
#frontier td:first-child{white-space:nowrap}#stalls td.name{width:34%}
table.ctx td{overflow-wrap:anywhere}table.ctx td:first-child{white-space:nowrap;width:1%}
""" + bounds


SCRIPT = """
const points = JSON.parse(document.getElementById('points').textContent);
const svg = document.querySelector('#roofline svg');
const tip = document.getElementById('tip');
function nearest(e) {
  const pt = svg.createSVGPoint(); pt.x = e.clientX; pt.y = e.clientY;
  const p = pt.matrixTransform(svg.getScreenCTM().inverse());
  let best = null, bestD = Infinity;
  for (const q of points) {
    const dx = q[0] - p.x, dy = q[1] - p.y, d = dx * dx + dy * dy, r = q[2] + 2;
    if (d <= r * r && d < bestD) { best = q; bestD = d; }
  }
  return best;
}
if (svg) {
  svg.addEventListener('mousemove', (e) => {
    const q = nearest(e);
    if (!q) { tip.style.display = 'none'; svg.style.cursor = ''; return; }
    tip.textContent = q[4];
    tip.style.left = (e.clientX + 14) + 'px'; tip.style.top = (e.clientY + 14) + 'px';
    tip.style.display = 'block'; svg.style.cursor = 'pointer';
  });
  svg.addEventListener('mouseleave', () => { tip.style.display = 'none'; });
  svg.addEventListener('click', (e) => { const q = nearest(e); if (q) { location.hash = 'k' + q[3]; } });
}
"""


def _e(value: object) -> str:
    """Text from a report or a campaign's config, inert (safe_text.clean) and escaped."""
    return html.escape(clean(value))


_BREAK_AFTER = re.compile(r"(::|,|&lt;|_|/)(?!$)")  # on escaped text: `<` is `&lt;` there


def name_html(value: object) -> str:
    """A kernel name (or an input's), escaped, that wraps where a name divides: after `::`, `,`,
    `<`, `_` and `/` (a <wbr> each); mid-token only where a piece is wider than its column."""
    return _BREAK_AFTER.sub(r"\1<wbr>", _e(value))


def _shown(value: object) -> object:
    """The hover data as the page shows it: every string inert line by line (safe_text.clean; a
    tooltip's lines are its own), numbers as they are."""
    if isinstance(value, str):
        return "\n".join(map(clean, value.split("\n")))
    if isinstance(value, (list, tuple)):
        return [_shown(v) for v in value]
    if isinstance(value, dict):
        return {k: _shown(v) for k, v in value.items()}
    return value


def _json(value: object) -> str:
    """The hover data as JSON, inert (_shown), that cannot end its <script> element or open a comment."""
    text = json.dumps(_shown(value), separators=(",", ":"), allow_nan=False, ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _table(t: Table, linked: set[int]) -> str:
    """The kernel table from the shared table model: same columns and order as the terminal."""
    head = "".join(f"<th class='{'num' if c.right else ''}'>{_e(c.heading)}</th>" for c in t.cols)
    body = []
    for row in t.rows:
        tds = []
        for c, v in zip(t.cols, row, strict=True):
            cls = ["num"] if c.right else []
            if c.elide:
                cls += ["name", "kernel"] if c.key == "name" else ["name"]
            if c.colour and v is not None and (paint := c.colour(v)):
                cls.append(f"c-{paint}")
            text = name_html(cell(c, v)) if c.elide else _e(cell(c, v))
            if c.key == "name" and row[0] in linked:
                text = f"<a href='#v{row[0]}'>{text}</a>"
            tds.append(f"<td class='{' '.join(cls)}'>{text}</td>")
        body.append(f"<tr id='k{row[0]}'>{''.join(tds)}</tr>")
    return f"<table id='kernels'><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _mix(rows: Sequence[Ranked]) -> str:
    """Share of kernel time by verdict, as one labelled bar; a provisional verdict (`compute?`: the
    report lacks the counters that would confirm it) is its own share, never counted as a sure one."""
    total = total_time(rows)
    by: dict[str, float] = {}
    for r in rows:
        by[bound_cell(r.lead)] = by.get(bound_cell(r.lead), 0.0) + (r.total_ns or 0.0) / total * 100
    spans = "".join(f"<span class='b-{_e(b.rstrip('?'))}' style='width:{v:.2f}%' title='{_e(b)} {v:.1f} %'>"
                    f"{_e(b) + ' ' if v >= 12 else ''}{v:.0f} %</span>" for b, v in by.items() if v > 0)
    words = ", ".join(f"{_e(b)} {v:.0f} %" for b, v in sorted(by.items(), key=lambda kv: -kv[1]))
    if any(b.endswith("?") for b in by):
        words += " (? provisional: the report lacks the counters that would confirm it)"
    return f"<p class='note'>Kernel time by verdict: {words}</p><div class='mix'>{spans}</div>"


def _who(rank: int, name: str, source: str, where: Mapping[str, str] | None) -> str:
    """`#rank name`, and the input it is from where the rows come from several (two kernels of one
    name from two reports read apart)."""
    origin = f" <span class='from'>{name_html(where[source])}</span>" if where and source in where else ""
    return f"#{rank} {name_html(name)}{origin}"


def _frontier(rows: Sequence[Ranked], where: Mapping[str, str] | None) -> str:
    items = kernel_frontier(rows)
    if not items:
        return "<p class='note'>no lever fired for any kernel</p>"
    trs = "".join(
        f"<tr><td class='num'>{i}</td><td class='name'><a href='#v{rank}'>{_who(rank, f.kernel, f.source, where)}"
        "</a></td>"
        f"<td class='num'>{'—' if f.time_share_pct is None else f'{f.time_share_pct:.0f} %'}</td>"
        f"<td><b>{_e(f.rule)}</b>: {_e(f.action)}</td>"
        f"<td>{_e(f.expected)}</td><td>{_e(f.confirm)}</td></tr>"
        for i, (rank, f) in enumerate(items[:FRONTIER_ROWS], 1))
    return ("<table id='frontier'><thead><tr><th class='num'>#</th><th>kernel</th><th class='num'>time</th>"
            f"<th>lever</th><th>expected</th><th>confirm by</th></tr></thead><tbody>{trs}</tbody></table>"
            f"<p class='note'>{min(FRONTIER_ROWS, len(items))} of {len(items)} levers across kernels, ranked by "
            "expected gain x share of time / cost</p>")




def _stalls(rows: Sequence[Ranked], where: Mapping[str, str] | None) -> str:
    shown = rows[:STALL_ROWS]
    weight: dict[str, float] = {}
    for r in shown:
        for reason, share in (r.lead.record.warp_stalls or {}).items():
            weight[reason] = weight.get(reason, 0.0) + share
    colour = {reason: stall_colour(i) for i, reason in enumerate(sorted(weight, key=lambda k: -weight[k]))}
    trs = []
    for r in shown:
        stalls = r.lead.record.warp_stalls
        name = f"<td class='name'>{_who(r.rank, r.name, r.group.source, where)}</td>"
        if stalls is None:
            trs.append(f"<tr>{name}<td class='unknown'>not collected (capture with --add stalls or --set full)"
                       "</td></tr>")
            continue
        segs = "".join(
            f"<span title='{_e(k)} {v:.1f} %' style='width:{v:.2f}%;background:{colour[k]}'>"
            f"{(_e(k) + ' ') if v >= 28 else ''}{f'{v:.0f} %' if v >= 5 else ''}</span>"
            for k, v in sorted(stalls.items(), key=lambda kv: -kv[1]) if v > 0)
        trs.append(f"<tr>{name}<td><div class='bar'>{segs}</div></td></tr>")
    legend = "".join(f"<span style='background:{c}'></span>{_e(r)}" for r, c in colour.items())
    more = f" (the {len(shown)} kernels with the most time)" if len(rows) > len(shown) else ""
    return (f"<p class='legend'>{legend}</p><table id='stalls'>{''.join(trs)}</table><p class='note'>share of "
            "stalled warp-cycles per reason (smsp__average_warps_issue_stalled_*_per_issue_active), the issuing "
            f"warp excluded; every reason present is drawn and named{more}</p>")


def _verdict(r: Ranked, open_: bool, where: Mapping[str, str] | None) -> str:
    a = r.lead
    limiters = "".join(f"<li>{_e(x)}</li>" for x in a.limiters)
    levers = "".join(f"<div class='lever'>{k}. <b>{_e(lv.rule)}</b>: {_e(lv.action)}<br>expect: {_e(lv.expected)}; "
                     f"confirm: {_e(lv.confirm)}</div>" for k, lv in enumerate(a.next_levers, 1))
    missing = unmeasured_of(a)
    unmeasured = f"<p class='note'>unmeasured: {_e(', '.join(missing))}</p>" if missing else ""
    compute = a.compute_ceiling_key or "none (no FLOP counted, or no peak for its precision)"
    roofs = f"ceilings: compute {_e(compute)}, memory {_e(a.memory_ceiling_key)}"
    stands = "".join(f"<li><b>{_e(label)}</b>: {name_html(text) if label == 'full name' else _e(text)}</li>"
                     for label, text in judgement(a))
    who = _who(r.rank, r.name, r.group.source, where)
    return (f"<details id='v{r.rank}'{' open' if open_ else ''}><summary><b>{who}</b> — "
            f"{_e(a.verdict)}</summary><ul class='stands'>{stands}</ul><p class='note'>{roofs}; "
            f"{len(r.group.launches)} launch(es), the representative one shown</p><ul>{limiters}</ul>{levers}"
            f"{unmeasured}</details>")


def _context(ctx: Mapping[str, str]) -> str:
    rows = "".join(
        f"<tr><td>{_e(k.replace('_', ' '))}</td><td class='{'unknown' if v == 'unknown' else ''}'>{_e(v)}</td></tr>"
        for k, v in ctx.items())
    return f"<table class='ctx'>{rows}</table>"


@dataclass(frozen=True)
class Page:
    title: str
    subtitle: str  # device, model, metric set, counts: what the figures are of
    context: Mapping[str, str]  # the full context header (report.context)
    labels: Mapping[str, str]  # report path -> input name or campaign cell id
    origin: str = "source"  # what the labels are: "source" or "cell"
    per_launch: bool = False  # one row a launch: the table says which launch


def render_html(rows: Sequence[Ranked], data: RooflineData, page: Page) -> str:
    svg, where = render_svg(data, page.title, page.subtitle)
    hover = [[x, y, rad, p.rank, "\n".join(p.details.values())]
             for (x, y, rad), p in zip(where, data.points, strict=True)]
    shown = rows[:TABLE_ROWS]
    more = ""
    if len(rows) > len(shown):
        rest = sum(r.total_ns or 0.0 for r in rows[len(shown):]) / total_time(rows)
        more = (f"<p class='note'>{len(rows) - len(shown):,} more kernels ({100 * rest:.1f} % of time) are on the "
                "roofline (hover) and in <code>kernelscope analyze --format csv</code></p>")
    table = kernel_table(shown, page.labels, page.origin, show_origin=page.origin == "cell" or None,
                         per_launch=page.per_launch)
    sources = origins(rows, page.labels)
    verdicts = "".join(_verdict(r, i < 3, sources) for i, r in enumerate(rows[:VERDICTS]))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>{_e(page.title)}</title><style>{_css()}</style></head>
<body><h1>{_e(page.title)}</h1><p class="sub">{_e(page.subtitle)} · <a href="#context">full context</a></p>
{_mix(rows)}
<h2 id="levers">Next levers</h2>{_frontier(rows, sources)}
<h2>Kernels ({len(rows):,})</h2>{_table(table, {r.rank for r in rows[:VERDICTS]})}{more}
<h2>Roofline</h2><p class="note">hover a marker for its figures, click it for its row; numbers are the table's
#; hollow markers: arithmetic intensity not measured, placed by SM busy against their family's ceiling</p>
<div id="roofline">{svg}</div>
<h2>Warp stalls</h2>{_stalls(rows, sources)}
<h2>Verdicts and next levers per kernel</h2>{verdicts}
<h2 id="context">Context</h2>{_context(page.context)}
<div id="tip"></div><script type="application/json" id="points">{_json(hover)}</script><script>{SCRIPT}</script>
</body></html>
"""
