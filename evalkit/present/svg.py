"""Inline SVG charts for the HTML emitter (:mod:`evalkit.present.to_html`): bar charts, heat maps,
a reliability diagram.

Every function returns a complete ``<svg>`` element as a string. The charts need no script and no
network: geometry is computed here and written with fixed precision, so the same data always gives
byte-identical markup. All text that reaches the markup (labels, titles) goes through
:func:`esc`; numbers are formatted by this module, never interpolated raw.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from evalkit.present.safe import html_text

FONT = "font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;font-size:12px"
BAR = "#3b6ea5"
BAR_BAD = "#b5483b"
MISSING = "#d9d9d9"
GRID = "#c8c8c8"
WHISKER = "#1a1a1a"


# The kit's one HTML escaping rule (text and attribute positions), under the name the report uses.
esc = html_text


def _n(x: float) -> str:
    """A coordinate with one decimal: stable across platforms, small markup."""
    value = round(float(x), 1)
    if value == 0:
        value = 0.0  # no "-0.0"
    return f"{value:.1f}"


def _fmt(value: float | None, fmt: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return format(value, fmt)


def _open(width: float, height: float, kind: str, title: str) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart chart-{kind}" role="img" '
        f'width="{_n(width)}" height="{_n(height)}" viewBox="0 0 {_n(width)} {_n(height)}" '
        f'aria-label="{esc(title)}" style="{FONT}">',
        f"<title>{esc(title)}</title>",
    ]


def _clip(label: str, max_chars: int) -> str:
    return label if len(label) <= max_chars else label[: max_chars - 1] + "\u2026"


def bar_chart(
    items: Sequence[tuple[str, float | None]],
    *,
    title: str,
    max_value: float | None = 1.0,
    value_format: str = ".2f",
    flagged: Sequence[bool] | None = None,
    label_chars: int = 40,
    intervals: Sequence[Sequence[float] | None] | None = None,
) -> str:
    """Horizontal bars, one per ``(label, value)``; ``None`` draws an empty grey slot marked n/a.

    ``max_value`` fixes the axis (1.0 for rates and scores, so charts compare across reports);
    ``None`` scales to the largest value (for counts). ``value_format`` is a format spec for the
    value printed after each bar (``".0%"`` for rates). ``flagged`` colours a bar as a warning
    (for example a group with fewer than three scored runs). ``intervals`` draws each bar's
    confidence interval ``[low, high]`` as a whisker (None: no whisker, the interval is undefined).
    """
    label_w = min(label_chars, max((len(lbl) for lbl, _ in items), default=4)) * 7.2 + 12
    bar_w, row_h, top = 320.0, 20.0, 8.0
    width = label_w + bar_w + 70
    height = top * 2 + row_h * max(len(items), 1)
    scale_max = max_value
    if scale_max is None:
        scale_max = max((v for _, v in items if v is not None), default=0) or 1
    out = _open(width, height, "bar", title)
    out.append(
        f'<line x1="{_n(label_w)}" y1="{_n(top - 4)}" x2="{_n(label_w)}" y2="{_n(height - top + 4)}" stroke="{GRID}"/>'
    )
    for i, (label, value) in enumerate(items):
        y = top + i * row_h
        warn = bool(flagged[i]) if flagged else False
        out.append(f'<g class="bar" data-label="{esc(label)}">')
        out.append(
            f'<text x="{_n(label_w - 6)}" y="{_n(y + 14)}" text-anchor="end">{esc(_clip(label, label_chars))}</text>'
        )
        if value is None:
            out.append(
                f'<rect x="{_n(label_w)}" y="{_n(y + 3)}" width="{_n(bar_w)}" height="{_n(row_h - 6)}" '
                f'fill="none" stroke="{MISSING}" stroke-dasharray="3 3"/>'
            )
        else:
            frac = max(0.0, min(1.0, float(value) / scale_max)) if scale_max else 0.0
            colour = BAR_BAD if warn else BAR
            out.append(
                f'<rect x="{_n(label_w)}" y="{_n(y + 3)}" width="{_n(bar_w * frac)}" '
                f'height="{_n(row_h - 6)}" fill="{colour}"/>'
            )
        text = _fmt(value, value_format) + (" (n<3)" if warn else "")
        end = float(value) / scale_max if value and scale_max else 0.0
        ci = intervals[i] if intervals else None
        if ci is not None and value is not None and scale_max:
            lo, hi = (max(0.0, min(1.0, float(b) / scale_max)) for b in ci)
            mid = y + row_h / 2
            out.append(
                f'<path class="ci" d="M{_n(label_w + bar_w * lo)} {_n(mid)}H{_n(label_w + bar_w * hi)}'
                f"M{_n(label_w + bar_w * lo)} {_n(mid - 4)}V{_n(mid + 4)}"
                f'M{_n(label_w + bar_w * hi)} {_n(mid - 4)}V{_n(mid + 4)}" '
                f'stroke="{WHISKER}" stroke-width="1.5" fill="none"><title>{esc(_fmt(ci[0], value_format))} to '
                f"{esc(_fmt(ci[1], value_format))}</title></path>"
            )
            end = max(end, hi)
        x_text = label_w + bar_w * min(1.0, end) + 4
        out.append(f'<text x="{_n(x_text)}" y="{_n(y + 14)}">{esc(text)}</text>')
        out.append("</g>")
    out.append("</svg>")
    return "".join(out)


def _heat_colour(frac: float) -> str:
    """White to the bar blue; linear in each channel so equal counts give equal colours."""
    frac = max(0.0, min(1.0, frac))
    r = round(255 + (59 - 255) * frac)
    g = round(255 + (110 - 255) * frac)
    b = round(255 + (165 - 255) * frac)
    return f"#{r:02x}{g:02x}{b:02x}"


def heat_map(
    row_labels: Sequence[object],
    col_labels: Sequence[object],
    matrix: Sequence[Sequence[float | int]],
    *,
    title: str,
    row_axis: str = "",
    col_axis: str = "",
) -> str:
    """A confusion matrix as a heat map: rows × columns of counts, each cell shaded by its share
    of the largest cell and labelled with the count. Diagonal cells get a darker outline."""
    rows, cols = [str(x) for x in row_labels], [str(x) for x in col_labels]
    widest = max((len(x) for x in rows + cols), default=1)
    cell = max(44.0, min(widest, 14) * 7.0 + 10)
    left = min(max((len(r) for r in rows), default=1), 14) * 7 + 30
    top = 46.0
    width = left + cell * max(len(cols), 1) + 20
    height = top + cell * max(len(rows), 1) + 20
    peak = max((float(v) for row in matrix for v in row), default=0.0) or 1.0
    out = _open(width, height, "heatmap", title)
    if col_axis:
        out.append(
            f'<text x="{_n(left + cell * len(cols) / 2)}" y="14" text-anchor="middle" '
            f'font-weight="bold">{esc(col_axis)}</text>'
        )
    if row_axis:
        out.append(
            f'<text x="10" y="{_n(top + cell * len(rows) / 2)}" text-anchor="middle" font-weight="bold" '
            f'transform="rotate(-90 10 {_n(top + cell * len(rows) / 2)})">{esc(row_axis)}</text>'
        )
    for j, label in enumerate(cols):
        out.append(
            f'<text x="{_n(left + cell * j + cell / 2)}" y="{_n(top - 8)}" text-anchor="middle">'
            f"{esc(_clip(label, 14))}</text>"
        )
    for i, label in enumerate(rows):
        out.append(
            f'<text x="{_n(left - 6)}" y="{_n(top + cell * i + cell / 2 + 4)}" text-anchor="end">'
            f"{esc(_clip(label, 14))}</text>"
        )
        for j in range(len(cols)):
            value = matrix[i][j]
            frac = float(value) / peak
            x, y = left + cell * j, top + cell * i
            stroke = "#333" if i == j else "#fff"
            out.append(
                f'<g class="cell" data-row="{esc(label)}" data-col="{esc(cols[j])}">'
                f'<rect x="{_n(x)}" y="{_n(y)}" width="{_n(cell)}" height="{_n(cell)}" '
                f'fill="{_heat_colour(frac)}" stroke="{stroke}"/>'
                f'<text x="{_n(x + cell / 2)}" y="{_n(y + cell / 2 + 4)}" text-anchor="middle" '
                f'fill="{"#fff" if frac > 0.55 else "#111"}">{esc(_fmt(value, "g"))}</text></g>'
            )
    out.append("</svg>")
    return "".join(out)


def reliability_diagram(bands: Sequence[dict], *, title: str) -> str:
    """Accuracy against stated confidence, one point per band, with the diagonal of perfect
    calibration. ``bands`` are dicts with ``lo``, ``hi``, ``n``, ``confidence`` (mean stated
    confidence in the band) and ``accuracy``; empty bands (n == 0) are skipped. Point area grows
    with n so a band of two runs does not look as solid as one of two hundred."""
    size, pad = 240.0, 52.0
    width = height = size + pad * 2
    out = _open(width, height, "reliability", title)

    def px(v: float) -> float:
        return pad + size * v

    def py(v: float) -> float:
        return pad + size * (1 - v)

    out.append(
        f'<rect x="{_n(pad)}" y="{_n(pad)}" width="{_n(size)}" height="{_n(size)}" fill="none" stroke="{GRID}"/>'
    )
    for t in (0.0, 0.25, 0.5, 0.75, 1.0):
        out.append(f'<text x="{_n(px(t))}" y="{_n(pad + size + 16)}" text-anchor="middle">{t:g}</text>')
        out.append(f'<text x="{_n(pad - 6)}" y="{_n(py(t) + 4)}" text-anchor="end">{t:g}</text>')
    out.append(
        f'<line class="diagonal" x1="{_n(px(0))}" y1="{_n(py(0))}" x2="{_n(px(1))}" y2="{_n(py(1))}" '
        f'stroke="#888" stroke-dasharray="4 3"/>'
    )
    out.append(f'<text x="{_n(pad + size / 2)}" y="{_n(height - 6)}" text-anchor="middle">stated confidence</text>')
    out.append(
        f'<text x="14" y="{_n(pad + size / 2)}" text-anchor="middle" '
        f'transform="rotate(-90 14 {_n(pad + size / 2)})">observed accuracy</text>'
    )
    total = sum(int(b.get("n") or 0) for b in bands) or 1
    points = []
    for band in bands:
        n = int(band.get("n") or 0)
        conf, acc = band.get("confidence"), band.get("accuracy")
        if n == 0 or conf is None or acc is None:
            continue
        r = 3 + 9 * math.sqrt(n / total)
        points.append((px(float(conf)), py(float(acc))))
        lo, hi = band.get("lo"), band.get("hi")
        label = f"band {lo}-{hi}: n={n}, confidence {float(conf):.2f}, accuracy {float(acc):.2f}"
        out.append(
            f'<circle class="band" cx="{_n(px(float(conf)))}" cy="{_n(py(float(acc)))}" r="{_n(r)}" '
            f'fill="{BAR}" fill-opacity="0.75"><title>{esc(label)}</title></circle>'
        )
    if len(points) > 1:
        path = " ".join(f"{_n(x)},{_n(y)}" for x, y in points)
        out.append(f'<polyline points="{path}" fill="none" stroke="{BAR}"/>')
    out.append("</svg>")
    return "".join(out)
