"""The frame of the benchmarks' dependency-free SVG plots: white page, axes, labels and five ticks per
axis; the caller draws its marks with the returned coordinate maps."""

from __future__ import annotations

import html
from collections.abc import Callable


def frame(width: int, height: int, x_range: tuple[float, float], y_range: tuple[float, float], *, xlabel: str,
          ylabel: str, title: str = "", xfmt: str = "g", pad: int = 60
          ) -> tuple[list[str], Callable[[float], float], Callable[[float], float]]:
    """(the SVG's opening parts, x -> pixel, y -> pixel). Close the list with ``"</svg>"``."""
    (x0, x1), (y0, y1) = x_range, y_range
    W, H = width, height
    X = lambda v: pad + (v - x0) / ((x1 - x0) or 1) * (W - 2 * pad)  # noqa: E731
    Y = lambda v: H - pad - (v - y0) / ((y1 - y0) or 1) * (H - 2 * pad)  # noqa: E731
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<line x1="{pad}" y1="{H - pad}" x2="{W - pad}" y2="{H - pad}" stroke="black"/>',
           f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{H - pad}" stroke="black"/>',
           f'<text x="{W / 2}" y="{H - 20}" text-anchor="middle">{html.escape(xlabel)}</text>',
           f'<text x="15" y="{H / 2}" transform="rotate(-90 15 {H / 2})" text-anchor="middle">{html.escape(ylabel)}</text>']
    if title:
        out.append(f'<text x="{W / 2}" y="20" text-anchor="middle" font-size="13">{html.escape(title)}</text>')
    for k in range(5):
        xv, yv = x0 + k * (x1 - x0) / 4, y0 + k * (y1 - y0) / 4
        out += [f'<text x="{X(xv):.1f}" y="{H - pad + 15}" text-anchor="middle">{xv:{xfmt}}</text>',
                f'<text x="{pad - 6}" y="{Y(yv) + 4:.1f}" text-anchor="end">{yv:.1f}</text>']
    return out, X, Y
