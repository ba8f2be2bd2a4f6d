"""The report's two pictures as inline SVG (well-formed XML; every name from the model escaped):
the optimized graph, and the activation memory plan (each buffer a rectangle: lifetime x offset range)."""

from __future__ import annotations

from html import escape
from typing import Any

from ember.report.layout import layered

BOX_W, BOX_H, GAP_X, GAP_Y = 236.0, 56.0, 24.0, 30.0
PALETTE = ("#8fb8de", "#f4b183", "#a9d18e", "#ffd966", "#c9a0dc", "#9dc3e6", "#f8cbad", "#b4c7e7", "#e2a0a0")


def qty(n: float, unit: str = "") -> str:
    """1234567 -> '1.23M' (bytes and MACs at a glance; tables give exact figures)."""
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= scale:
            return f"{n / scale:.3g}{suffix}{unit}"
    return f"{n:g}{unit}"


def shape_text(out: list[Any]) -> str:
    return " ".join(f"{dt}[{'x'.join(str(d) for d in shape)}]" for dt, shape in out)


def _clip(s: str, n: int = 34) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def _clip_left(s: str, n: int) -> str:
    """The end of a long name: exporters put the distinguishing part last (/layers.2/conv/Conv_output_0)."""
    return s if len(s) <= n else "…" + s[len(s) - n + 1:]


def _text(x: float, y: float, s: str, cls: str = "") -> str:
    c = f' class="{cls}"' if cls else ""
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="middle"{c}>{escape(_clip(s))}</text>'


def graph_svg(manifest: dict[str, Any], node_ms: dict[int, float] | None = None) -> str:
    g = manifest["graph"]
    names = manifest["nodes"]
    ins, outs, nodes = manifest["inputs"], manifest["outputs"], g["nodes"]
    n_in, n_nodes = len(ins), len(nodes)

    def box(ref: int) -> int:  # a node index, or -1-k for graph input k
        return n_in + ref if ref >= 0 else -1 - ref

    preds = [[] for _ in ins] + [[box(r) for r in nd["in"]] for nd in nodes]
    preds += [[box(r)] if r is not None else [] for r in g["outputs"]]
    places, width, height = layered(preds, BOX_W, BOX_H, GAP_X, GAP_Y, first_layer=list(range(n_in)))
    hottest = max(node_ms.values(), default=0.0) if node_ms else 0.0
    right: dict[int, float] = {}  # each row's right edge, for edges that skip rows
    for p in places:
        right[p.layer] = max(right.get(p.layer, 0.0), p.x + BOX_W / 2)
    lanes = 0
    edges = []
    for dst, ps in enumerate(preds):
        for src in ps:
            a, b = places[src], places[dst]
            y0, y1, mid = a.y + BOX_H, b.y, (a.y + BOX_H + b.y) / 2
            if b.layer - a.layer <= 1:
                edges.append(f'<path class="edge" d="M{a.x:.1f},{y0:.1f} C{a.x:.1f},{mid:.1f} {b.x:.1f},{mid:.1f} '
                             f'{b.x:.1f},{y1:.1f}" marker-end="url(#arrow)"/>')
                continue
            # A skip connection goes down a lane right of the rows it passes, not through their boxes.
            lanes += 1
            lane = max(right[d] for d in range(a.layer + 1, b.layer)) + 6 + 5 * lanes
            width = max(width, lane + GAP_X)
            s0, s1 = y0 + GAP_Y / 2, y1 - GAP_Y / 2
            edges.append(f'<path class="edge skip" d="M{a.x:.1f},{y0:.1f} C{a.x:.1f},{s0:.1f} {lane:.1f},{y0:.1f} '
                         f'{lane:.1f},{s0:.1f} L{lane:.1f},{s1:.1f} C{lane:.1f},{y1:.1f} {b.x:.1f},{s1:.1f} '
                         f'{b.x:.1f},{y1:.1f}" marker-end="url(#arrow)"/>')
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" id="graph-svg" class="graph" width="{width:.0f}" '
             f'height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}">',
             '<defs><marker id="arrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="7" markerHeight="7" '
             'orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#667"/></marker></defs>', *edges]
    for k, e in enumerate(ins):
        parts.append(_terminal(places[k].x, places[k].y, "input", e))
    for i, nd in enumerate(nodes):
        p = places[n_in + i]
        ms = node_ms.get(i) if node_ms else None
        fill = _heat(ms / hottest) if ms is not None and hottest > 0 else ("#dce8fa" if nd.get("algorithm") else
                                                                             "#f2f4f7")
        title = (f"#{i} {names[i]['name']}\nop: {names[i]['op']}\noutputs: {shape_text(nd['out'])}\n"
                 f"MACs: {nd['macs']:,}" + (f"\nalgorithm: {nd['algorithm']}" if nd.get("algorithm") else "")
                 + (f"\ntime: {ms:.4f} ms" if ms is not None else ""))
        third = " · ".join(s for s in (f"{qty(nd['macs'])} MACs" if nd["macs"] else "", nd.get("algorithm", ""),
                                       f"{ms:.3f} ms" if ms is not None else "") if s)
        x0 = p.x - BOX_W / 2
        parts += [f'<g class="node" data-index="{i}"><title>{escape(title)}</title>',
                  f'<rect x="{x0:.1f}" y="{p.y:.1f}" width="{BOX_W:.0f}" height="{BOX_H:.0f}" rx="5" '
                  f'fill="{fill}"/>',
                  _text(p.x, p.y + 16, f"{names[i]['op']}  #{i}", "op"),
                  _text(p.x, p.y + 32, shape_text(nd["out"])),
                  _text(p.x, p.y + 48, third or names[i]["name"], "dim"), "</g>"]
    for k, e in enumerate(outs):
        p = places[n_in + n_nodes + k]
        parts.append(_terminal(p.x, p.y, "output", e))
    parts.append("</svg>")
    return "\n".join(parts)


def _terminal(x: float, y: float, kind: str, e: dict[str, Any]) -> str:
    label = f"{e['name']}: {e['dtype']}[{'x'.join(str(d) for d in e['shape'])}]"
    return (f'<g class="{kind}"><title>{escape(kind + " " + label)}</title>'
            f'<rect x="{x - BOX_W / 2:.1f}" y="{y + 10:.1f}" width="{BOX_W:.0f}" height="{BOX_H - 20:.0f}" '
            f'rx="18" fill="#fff" stroke="#445"/>{_text(x, y + BOX_H / 2 + 4, label)}</g>')


def _heat(f: float) -> str:
    """White to orange by the node's share of the slowest node's time."""
    g, b = int(245 - 120 * f), int(240 - 200 * f)
    return f"#ff{g:02x}{b:02x}"


def memory_svg(manifest: dict[str, Any], plot_w: float = 960.0, plot_h: float = 360.0) -> str:
    mp, mem = manifest["memory_plan"], manifest["memory"]
    steps = max(mp["steps"], 1)
    top = max(mem["activations"], mem["activations_lower_bound"], 1)
    left, bottom, pad = 72.0, 34.0, 12.0
    sx, sy = plot_w / steps, plot_h / top
    w, h = left + plot_w + pad, pad + plot_h + bottom
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" id="memory-svg" class="memory" width="{w:.0f}" '
             f'height="{h:.0f}" viewBox="0 0 {w:.0f} {h:.0f}">',
             f'<rect x="{left}" y="{pad}" width="{plot_w}" height="{plot_h}" fill="#fafafa" stroke="#999"/>']
    for k, (start, end, offset, size, label) in enumerate(mp["buffers"]):
        x, y = left + start * sx, pad + offset * sy
        title = f"{label}: {size:,} bytes at activations+{offset:,}, live in steps {start}..{end}"
        parts.append(f'<rect class="buf" data-start="{start}" data-end="{end}" data-offset="{offset}" '
                     f'data-size="{size}" x="{x:.2f}" y="{y:.2f}" width="{(end - start + 1) * sx:.2f}" '
                     f'height="{max(size * sy, 0.5):.2f}" fill="{PALETTE[k % len(PALETTE)]}" stroke="#333" '
                     f'stroke-width="0.5"><title>{escape(title)}</title></rect>')
        width, height = (end - start + 1) * sx, size * sy
        if width >= 80 and height >= 16:  # room for the tensor's name (every rectangle has it on hover)
            parts.append(f'<text x="{x + 4:.1f}" y="{y + 12:.1f}" class="dim">'
                         f'{escape(_clip_left(label, int(width / 7)))}</text>')
    lb = pad + mem["activations_lower_bound"] * sy
    parts.append(f'<line class="lower-bound" x1="{left}" x2="{left + plot_w}" y1="{lb:.2f}" y2="{lb:.2f}" '
                 'stroke="#c00" stroke-dasharray="6,4"/>')
    parts.append(f'<text x="{left + plot_w - 4}" y="{lb - 4:.2f}" text-anchor="end" fill="#c00">lower bound '
                 f'{qty(mem["activations_lower_bound"], "B")}</text>')
    for f in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(f'<text x="{left - 6}" y="{pad + f * plot_h + 4:.1f}" text-anchor="end">'
                     f'{qty(f * top, "B")}</text>')
    ticks = sorted({0, steps // 4, steps // 2, 3 * steps // 4, steps - 1})
    for t in ticks:
        parts.append(f'<text x="{left + (t + 0.5) * sx:.1f}" y="{pad + plot_h + 16}" text-anchor="middle">{t}'
                     "</text>")
    parts.append(f'<text x="{left + plot_w / 2}" y="{h - 3}" text-anchor="middle">node step (lifetime) →'
                 "</text>")
    parts.append(f'<text x="14" y="{pad + plot_h / 2}" transform="rotate(-90 14 {pad + plot_h / 2})" '
                 'text-anchor="middle">offset in activations ↓</text>')
    parts.append("</svg>")
    return "\n".join(parts)
