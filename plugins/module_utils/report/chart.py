"""Bus bandwidth against message size as inline SVG, for report.html: no plotting library on the
controller, nothing fetched by the browser.

One path per run (class "run"), message size on a log2 axis, busbw (out of place, GB/s) on a
linear one, and each run's min_busbw_gbps gate as a dashed line in the run's colour.
"""

from __future__ import annotations

import math
from html import escape

from .values import bandwidth_lines, human_size, number

# Colour-blind-safe (Okabe-Ito), in the order the runs come.
PALETTE = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000", "#f0e442")
WIDTH, PLOT_HEIGHT = 960, 320
LEFT, RIGHT, TOP, BOTTOM = 64, 24, 16, 44
LEGEND_ROW = 18


def run_gates(report):
    """{run title: min_busbw_gbps limit} for the runs whose busbw is gated (a limit above 0)."""
    gates = {}
    for run in report.get("runs") or []:
        for gate in (run.get("perf") or {}).get("gates") or []:
            limit = gate.get("limit")
            if gate.get("name") == "min_busbw_gbps" and isinstance(limit, (int, float)) and limit > 0:
                gates[run.get("title")] = float(limit)
    return gates


def line_colours(report):
    """{run title: colour} of the runs the chart draws, so that a run's section can show its colour."""
    return {line["label"]: PALETTE[index % len(PALETTE)] for index, line in enumerate(bandwidth_lines(report))}


def one_rank_runs(report):
    """The titles of runs with one rank: their busbw is 0 by definition, the legend says so."""
    return {run.get("title") for run in report.get("runs") or [] if (run.get("perf") or {}).get("ranks") == 1}


def busbw_svg(report):
    """The chart as an <svg> element (a string), or '' when no run measured any bandwidth."""
    lines = bandwidth_lines(report)
    if not lines:
        return ""
    gates, one_rank = run_gates(report), one_rank_runs(report)
    low = min(math.log2(size) for line in lines for size in line["sizes"])
    high = max(math.log2(size) for line in lines for size in line["sizes"])
    if high - low < 1:  # one size: give the point room on both sides
        low, high = low - 1, high + 1
    top = max([value for line in lines for value in line["busbw"]] + list(gates.values()) + [0.0])
    y_step, y_top = _nice_axis(top)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, PLOT_HEIGHT - TOP - BOTTOM

    def x_of(size):
        return LEFT + (math.log2(size) - low) / (high - low) * plot_w

    def y_of(value):
        return TOP + plot_h - value / y_top * plot_h

    legend = len(lines) + sum(1 for line in lines if line["label"] in gates)
    height = PLOT_HEIGHT + 8 + legend * LEGEND_ROW
    parts = ['<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" width="{0}" height="{1}" '
             'viewBox="0 0 {0} {1}" aria-label="bus bandwidth against message size, one line per run">'.format(
                 WIDTH, height),
             '<rect x="{0}" y="{1}" width="{2}" height="{3}" class="plot"/>'.format(LEFT, TOP, plot_w, plot_h)]
    steps = int(round(y_top / y_step))
    for index in range(steps + 1):
        value = index * y_step
        y = y_of(value)
        parts.append('<line class="grid" x1="{0}" x2="{1}" y1="{2:.1f}" y2="{2:.1f}"/>'.format(LEFT, LEFT + plot_w, y))
        parts.append('<text class="tick" x="{0}" y="{1:.1f}" text-anchor="end">{2}</text>'.format(
            LEFT - 6, y + 4, escape(number(round(value, 6)))))
    first, last = int(math.ceil(low)), int(math.floor(high))
    stride = max(1, int(math.ceil((last - first + 1) / 9.0)))
    for exponent in range(first, last + 1, stride):
        x = x_of(2 ** exponent)
        parts.append('<line class="grid" x1="{0:.1f}" x2="{0:.1f}" y1="{1}" y2="{2}"/>'.format(x, TOP, TOP + plot_h))
        parts.append('<text class="tick" x="{0:.1f}" y="{1}" text-anchor="middle">{2}</text>'.format(
            x, TOP + plot_h + 16, escape(human_size(2 ** exponent))))
    parts.append('<text class="axis" x="{0}" y="{1}" text-anchor="middle">message size (log scale)</text>'.format(
        LEFT + plot_w / 2, TOP + plot_h + 34))
    parts.append('<text class="axis" transform="translate(14 {0}) rotate(-90)" text-anchor="middle">'
                 'busbw, out of place (GB/s)</text>'.format(TOP + plot_h / 2))
    row = PLOT_HEIGHT + 8
    for index, line in enumerate(lines):
        colour = PALETTE[index % len(PALETTE)]
        points = [(x_of(size), y_of(value)) for size, value in zip(line["sizes"], line["busbw"])]
        path = "M" + " L".join("{0:.1f},{1:.1f}".format(x, y) for x, y in points)
        parts.append('<path class="run" d="{0}" stroke="{1}" data-run="{2}"/>'.format(
            path, colour, escape(line["label"])))
        for (x, y), size, value in zip(points, line["sizes"], line["busbw"]):
            parts.append('<circle cx="{0:.1f}" cy="{1:.1f}" r="2.5" fill="{2}"><title>{3}: {4} GB/s at {5}'
                         '</title></circle>'.format(x, y, colour, escape(line["label"]), escape(number(value)),
                                                    escape(human_size(size))))
        parts.append(_legend_entry(row, colour, line["label"] + (" (1 rank: busbw is 0 by definition)"
                                                                 if line["label"] in one_rank else ""), dashed=False))
        row += LEGEND_ROW
        if line["label"] in gates:
            y = y_of(gates[line["label"]])
            parts.append('<line class="gate" x1="{0}" x2="{1}" y1="{2:.1f}" y2="{2:.1f}" stroke="{3}" '
                         'data-run="{4}"/>'.format(LEFT, LEFT + plot_w, y, colour, escape(line["label"])))
            parts.append(_legend_entry(row, colour, "gate: {0} needs >= {1} GB/s".format(
                line["label"], number(gates[line["label"]])), dashed=True))
            row += LEGEND_ROW
    parts.append("</svg>")
    return "\n".join(parts)


def _legend_entry(y, colour, text, dashed):
    return ('<line class="{0}" x1="{1}" x2="{2}" y1="{3}" y2="{3}" stroke="{4}"/>'
            '<text class="legend" x="{5}" y="{6}">{7}</text>'.format(
                "key gate-key" if dashed else "key", LEFT, LEFT + 28, y + 6, colour, LEFT + 36, y + 10, escape(text)))


def _nice_axis(top):
    """(step, top of the axis): 1, 2 or 5 times a power of ten, about five steps, above `top`."""
    if top <= 0:
        return 1.0, 1.0
    raw = top * 1.1 / 5
    power = 10 ** math.floor(math.log10(raw))
    step = next(factor * power for factor in (1, 2, 5, 10) if factor * power >= raw)
    return step, step * math.ceil(top * 1.1 / step)
