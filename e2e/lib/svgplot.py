"""A line chart as a standalone SVG, in plain Python (no plotting library)."""

from xml.sax.saxutils import escape

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
           "#17becf", "#7f7f7f", "#bcbd22"]


def _nice_step(span: float, ticks: int = 6) -> float:
    raw = span / max(ticks, 1)
    mag = 10 ** len(str(int(raw))) / 10 if raw >= 1 else 1
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def line_chart(series: dict[str, list[tuple[float, float]]], *, title: str, xlabel: str,
               ylabel: str, marks: list[tuple[float, str]] = (), width: int = 900,
               height: int = 420) -> str:
    """`series`: name -> [(x, y)]; a gap (None for y) breaks a line (e.g. a restart).
    `marks`: (x, label) vertical dotted lines."""
    left, right, top, bottom = 64, 190, 36, 48
    pw, ph = width - left - right, height - top - bottom
    xs = [x for pts in series.values() for x, y in pts if y is not None]
    ys = [y for pts in series.values() for x, y in pts if y is not None]
    x0, x1 = (min(xs), max(xs)) if xs else (0.0, 1.0)
    if x1 <= x0:
        x1 = x0 + 1
    y1 = max(ys) if ys else 1.0
    ystep = _nice_step(y1 * 1.1 if y1 > 0 else 1)
    ymax = ystep * (int(y1 * 1.1 / ystep) + 1)
    xstep = _nice_step(x1 - x0, 8)

    def px(x):
        return left + (x - x0) / (x1 - x0) * pw

    def py(y):
        return top + ph - y / ymax * ph

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="22" font-size="15" font-weight="bold">{escape(title)}</text>']
    y = 0.0
    while y <= ymax + 1e-9:
        out.append(f'<line x1="{left}" y1="{py(y):.1f}" x2="{left + pw}" y2="{py(y):.1f}" '
                   f'stroke="#e5e5e5"/>')
        out.append(f'<text x="{left - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{y:g}</text>')
        y += ystep
    x = x0 - (x0 % xstep) + (xstep if x0 % xstep else 0)
    while x <= x1 + 1e-9:
        out.append(f'<line x1="{px(x):.1f}" y1="{top + ph}" x2="{px(x):.1f}" '
                   f'y2="{top + ph + 4}" stroke="black"/>')
        out.append(f'<text x="{px(x):.1f}" y="{top + ph + 17}" text-anchor="middle">{x:g}</text>')
        x += xstep
    out.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" '
               f'stroke="black"/>')
    out.append(f'<text x="{left + pw / 2}" y="{height - 10}" text-anchor="middle">'
               f'{escape(xlabel)}</text>')
    out.append(f'<text x="16" y="{top + ph / 2}" text-anchor="middle" '
               f'transform="rotate(-90 16 {top + ph / 2})">{escape(ylabel)}</text>')
    for mx, label in marks:
        if x0 <= mx <= x1:
            out.append(f'<line x1="{px(mx):.1f}" y1="{top}" x2="{px(mx):.1f}" y2="{top + ph}" '
                       f'stroke="#999" stroke-dasharray="3,3"/>')
            out.append(f'<text x="{px(mx) + 3:.1f}" y="{top + 12}" fill="#666">'
                       f'{escape(label)}</text>')
    for i, (name, pts) in enumerate(series.items()):
        color = PALETTE[i % len(PALETTE)]
        path, pen = [], "M"
        for x, y in pts:
            if y is None:
                pen = "M"
                continue
            path.append(f"{pen}{px(x):.1f},{py(y):.1f}")
            pen = "L"
        if path:
            out.append(f'<path d="{" ".join(path)}" fill="none" stroke="{color}" '
                       f'stroke-width="1.5"/>')
        ly = top + 14 + i * 18
        out.append(f'<line x1="{left + pw + 12}" y1="{ly - 4}" x2="{left + pw + 32}" '
                   f'y2="{ly - 4}" stroke="{color}" stroke-width="3"/>')
        out.append(f'<text x="{left + pw + 38}" y="{ly}">{escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
