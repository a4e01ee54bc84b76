"""A small deterministic SVG chart: points and lines on linear or log axes, no dependencies.

The HTML report embeds these inline, so the page is self-contained and the
same data always gives the same bytes (no plotting library, fonts or
timestamps involved).  Zeros on a log axis cannot be placed honestly, so they
are drawn on a separate "0" line below the axis and labelled as such.

Example::

    svg = chart([Series("float32", [(1e-7, 2e-8, "cell a")])], logx=True, logy=True,
                xlabel="bound", ylabel="discrepancy", diagonal=True)
"""
from __future__ import annotations

import dataclasses
import math
from xml.sax.saxutils import escape, quoteattr

W, H = 460, 300
LEFT, RIGHT, TOP, BOTTOM = 62, 12, 26, 46
LEGEND = 130    # width kept right of the plot for the legend, so it never hides a point
PALETTE = ("#1b6ac9", "#d9480f", "#2b8a3e", "#862e9c", "#e8590c", "#0b7285", "#5c940d", "#a61e4d")


@dataclasses.dataclass
class Series:
    """One named set of (x, y, tooltip) points; ``line`` joins them, ``dashed`` styles the line."""

    name: str
    points: list
    color: str | None = None
    line: bool = False
    dashed: bool = False
    hollow: bool = False


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and math.isfinite(v)


class _Axis:
    """Maps data values to pixels; on a log axis, non-positive values go to a '0' lane."""

    def __init__(self, values, lo_px, hi_px, log):
        self.log, self.lo_px, self.hi_px = log, lo_px, hi_px
        self.integer = all(float(v).is_integer() for v in values if _finite(v))
        vals = [v for v in values if _finite(v) and (v > 0 or not log)]
        if not vals:
            vals = [1.0] if log else [0.0, 1.0]
        lo, hi = min(vals), max(vals)
        if log:
            lo, hi = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
            if hi == lo:
                hi += 1
        else:
            lo, hi = min(lo, 0.0), hi
            if hi == lo:
                hi = lo + 1.0
        self.lo, self.hi = lo, hi
        self.zero_lane = log and any(_finite(v) and v <= 0 for v in values)

    def __call__(self, v) -> float:
        if self.log:
            if v <= 0:
                return self.zero_px
            t = (math.log10(v) - self.lo) / (self.hi - self.lo)
        else:
            t = (v - self.lo) / (self.hi - self.lo)
        return self.lo_px + t * (self.hi_px - self.lo_px)

    @property
    def zero_px(self) -> float:
        # a lane beyond the low end of the axis: 14px below for y; 24px left for x, clear of the first
        # decade's label ('1e-16' is about 26px wide, centred on its tick)
        return self.lo_px + (14 if self.hi_px < self.lo_px else -24)

    def ticks(self):
        if self.log:
            step = max(1, math.ceil((self.hi - self.lo) / 6))
            return [(10.0 ** e, f"1e{e}") for e in range(int(self.lo), int(self.hi) + 1, step)]
        if self.integer and self.hi - self.lo <= 12:    # layers, counts: label whole numbers only
            return [(float(v), str(int(v))) for v in range(int(self.lo), int(self.hi) + 1)]
        n = 5
        return [(self.lo + i * (self.hi - self.lo) / n, f"{self.lo + i * (self.hi - self.lo) / n:.3g}")
                for i in range(n + 1)]


def chart(series: list, *, xlabel: str, ylabel: str, title: str = "", logx=False, logy=False,
          diagonal=False, width=W, height=H) -> str:
    """An inline ``<svg>`` of the series; ``diagonal`` draws y = x (e.g. discrepancy = bound).

    ``diagonal`` needs both axes on the same scale (both log or both linear).
    """
    if diagonal and logx != logy:
        raise ValueError("diagonal: needs logx == logy")
    xs = [p[0] for s in series for p in s.points]
    ys = [p[1] for s in series for p in s.points]
    if diagonal:
        both = [v for v in xs + ys if _finite(v) and v > 0]
        xs, ys = xs + both, ys + both
    xa = _Axis(xs, LEFT + (26 if logx else 0), width - RIGHT - LEGEND, logx)
    ya = _Axis(ys, height - BOTTOM - (16 if logy else 0), TOP, logy)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label={quoteattr(title or ylabel)}>',
           f'<rect x="0" y="0" width="{width}" height="{height}" fill="#fff"/>']
    if title:
        out.append(f'<text x="{width / 2:.1f}" y="16" text-anchor="middle" font-size="13" '
                   f'font-weight="bold">{escape(title)}</text>')
    x0, x1, y0, y1 = xa.lo_px, xa.hi_px, ya.lo_px, ya.hi_px
    out.append(f'<rect x="{x0:.1f}" y="{y1:.1f}" width="{x1 - x0:.1f}" height="{y0 - y1:.1f}" '
               f'fill="none" stroke="#999"/>')
    for v, label in xa.ticks():
        px = xa(v)
        out.append(f'<line x1="{px:.1f}" y1="{y0:.1f}" x2="{px:.1f}" y2="{y1:.1f}" stroke="#eee"/>'
                   f'<text x="{px:.1f}" y="{height - BOTTOM + 30:.1f}" font-size="10" text-anchor="middle">'
                   f'{escape(label)}</text>')
    for v, label in ya.ticks():
        py = ya(v)
        out.append(f'<line x1="{x0:.1f}" y1="{py:.1f}" x2="{x1:.1f}" y2="{py:.1f}" stroke="#eee"/>'
                   f'<text x="{LEFT - 4}" y="{py + 3:.1f}" font-size="10" text-anchor="end">{escape(label)}</text>')
    if ya.zero_lane:
        out.append(f'<text x="{LEFT - 4}" y="{ya.zero_px + 3:.1f}" font-size="10" text-anchor="end">0</text>')
    if xa.zero_lane:
        out.append(f'<text x="{xa.zero_px:.1f}" y="{height - BOTTOM + 30:.1f}" font-size="10" '
                   f'text-anchor="middle">0</text>')
    if diagonal:
        lo, hi = max(xa.lo, ya.lo), min(xa.hi, ya.hi)   # the range both axes share
        a, b = (10.0 ** lo, 10.0 ** hi) if logx and logy else (lo, hi)
        if hi > lo:
            out.append(f'<line x1="{xa(a):.1f}" y1="{ya(a):.1f}" x2="{xa(b):.1f}" y2="{ya(b):.1f}" '
                       f'stroke="#888" stroke-dasharray="4 3"><title>discrepancy = bound</title></line>')
    out.append(f'<text x="{(x0 + x1) / 2:.1f}" y="{height - 6}" font-size="11" text-anchor="middle">'
               f'{escape(xlabel)}</text>')
    out.append(f'<text transform="translate(13 {(y0 + y1) / 2:.1f}) rotate(-90)" font-size="11" '
               f'text-anchor="middle">{escape(ylabel)}</text>')
    legend_y = TOP + 4
    for i, s in enumerate(series):
        color = s.color or PALETTE[i % len(PALETTE)]
        pts = [(xa(x), ya(y), tip) for x, y, tip in s.points if _finite(x) and _finite(y)]
        if s.line and len(pts) > 1:
            path = " ".join(f"{px:.1f},{py:.1f}" for px, py, _ in pts)
            dash = ' stroke-dasharray="5 3"' if s.dashed else ""
            out.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="1.5"{dash}/>')
        fill = "none" if s.hollow else color
        for px, py, tip in pts:
            out.append(f'<circle class="pt" cx="{px:.1f}" cy="{py:.1f}" r="3.2" fill="{fill}" stroke="{color}">'
                       f'<title>{escape(str(tip))}</title></circle>')
        if s.points:
            out.append(f'<rect x="{x1 + 8:.1f}" y="{legend_y - 8}" width="9" height="9" fill="{color}"/>'
                       f'<text x="{x1 + 21:.1f}" y="{legend_y}" font-size="10">{escape(s.name)} '
                       f'({len(pts)})</text>')
            legend_y += 13
    out.append("</svg>")
    return "".join(out)
