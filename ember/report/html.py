"""`ember report` / `ember compile --report`: one self-contained HTML page about a bundle.

Everything is inline (CSS, SVG; no script, no external resource, and a Content-Security-Policy that forbids
loading any): the optimized graph, the activation memory plan, region sizes against the lower bound, the
per-operator time of an `ember bench --json` file, and validation results (a JSON file; format in docs/).
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any

from ember.errors import EmberError
from ember.report.svg import graph_svg, memory_svg, qty, shape_text
from ember.version import __version__

_CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 22px; } h2 { font-size: 17px; margin-top: 28px; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 8px 0; } td, th { padding: 2px 10px; border-bottom: 1px solid #eee; }
th { text-align: left; background: #f4f4f4; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
.scroll { overflow: auto; max-height: 900px; border: 1px solid #ddd; }
svg text { font: 11px monospace; fill: #222; } svg .op { font-weight: bold; } svg .dim { fill: #555; }
svg .edge { fill: none; stroke: #667; stroke-width: 1.2; } svg .node rect { stroke: #445; }
.bar { display: inline-block; height: 10px; background: #8fb8de; } .fail { color: #b00; font-weight: bold; }
.pass { color: #070; font-weight: bold; }
"""
_CSP = "default-src 'none'; style-src 'unsafe-inline'"


def _table(head: list[str], rows: list[list[Any]], table_id: str) -> str:
    def cell(v: Any) -> str:
        if isinstance(v, bool):
            return f'<td class="{"pass" if v else "fail"}">{"yes" if v else "no"}</td>'
        if isinstance(v, int):
            return f'<td class="n">{v:,}</td>'
        if isinstance(v, float):
            return f'<td class="n">{v:.6g}</td>'
        return f"<td>{escape(str(v))}</td>"

    out = [f'<table id="{table_id}"><tr>' + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr>"]
    out += ["<tr>" + "".join(cell(v) for v in r) + "</tr>" for r in rows]
    return "\n".join(out) + "</table>"


def _memory(m: dict[str, Any]) -> str:
    mem, fp = m["memory"], m.get("footprint", {})
    lb = mem["activations_lower_bound"]
    ratio = f"{mem['activations'] / lb:.3f}" if lb else "-"
    rows = [["constant weights", mem["constant"], ""], ["mutable (inputs, outputs)", mem["mutable"], ""],
            ["activations", mem["activations"], f"{ratio} x the lower bound"],
            ["activations lower bound", lb, "peak of simultaneously live bytes"]]
    if fp:
        rows += [["flash (code + tables + constant weights)", fp["flash"], ""],
                 ["RAM (mutable + activations)", fp["ram"], ""]]
    widest = max((r[1] for r in rows), default=1) or 1
    bars = "".join(f'<div><span class="bar" style="width:{max(1, 400 * r[1] // widest)}px"></span> '
                   f"{escape(r[0])} {qty(r[1], 'B')}</div>" for r in rows[:4])
    return _table(["region", "bytes", "note"], rows, "regions") + bars


def _bench(m: dict[str, Any], b: dict[str, Any]) -> str:
    prof = b.get("profile", [])
    head = (f"<p>{b.get('rounds', 0)} rounds: latency min {b['min_ms']:.4f} ms, median {b['median_ms']:.4f} ms, "
            f"p90 {b['p90_ms']:.4f} ms (instrumented build below).</p>")
    total = sum(p["ms"] for p in prof) or 1.0
    by_op: dict[str, list[float]] = {}
    for p in prof:
        by_op.setdefault(p["op"], []).append(p["ms"])
    rows = [[op, len(ts), round(sum(ts), 6), round(100 * sum(ts) / total, 2)]
            for op, ts in sorted(by_op.items(), key=lambda kv: -sum(kv[1]))]
    return head + _table(["op", "nodes", "ms", "%"], rows, "op-times")


def _validation(v: dict[str, Any]) -> str:
    outs = v.get("outputs", [])
    if isinstance(outs, dict):
        outs = [{"output": k, **val} for k, val in outs.items()]
    keys = list(dict.fromkeys(k for o in outs for k in o))
    verdict = v.get("ok")
    head = "" if verdict is None else f'<p class="{"pass" if verdict else "fail"}">{"PASS" if verdict else "FAIL"}</p>'
    extra = {k: val for k, val in v.items() if k not in ("outputs", "ok")}
    tail = f"<p>{escape(json.dumps(extra))}</p>" if extra else ""
    return head + _table(keys, [[o.get(k, "") for k in keys] for o in outs], "validation") + tail


def render(manifest: dict[str, Any], bench: dict[str, Any] | None = None,
           validation: dict[str, Any] | None = None) -> str:
    m = manifest
    name = m.get("name", "?")
    if "graph" not in m or "memory_plan" not in m:
        raise EmberError(f"bundle {name}: its NAME.json has no graph record (compiled by ember "
                         f"{m.get('ember_version', '?')}); recompile it with ember {__version__} for a report")
    if bench is not None and bench.get("name") != name:
        raise EmberError(f"--bench: the results are for bundle {bench.get('name')!r}, not {name!r}")
    node_ms = {p["index"]: p["ms"] for p in bench.get("profile", [])} if bench else None
    g = m["graph"]["nodes"]
    summary = [["ember", m.get("ember_version", "")], ["target", m.get("target", "")],
               ["model sha256", m.get("model_sha256", "")], ["nodes", len(g)],
               ["MACs", sum(nd["macs"] for nd in g)]]
    summary += [[f"input {e['name']}", f"{e['dtype']}{e['shape']}"] for e in m["inputs"]]
    summary += [[f"output {e['name']}", f"{e['dtype']}{e['shape']}"] for e in m["outputs"]]
    nodes = [[i, m["nodes"][i]["name"], m["nodes"][i]["op"], nd.get("algorithm", ""), shape_text(nd["out"]),
              nd["macs"]] + ([round(node_ms.get(i, 0.0), 6)] if node_ms else []) for i, nd in enumerate(g)]
    passes = [[p["name"], p["seconds"], p["nodes"]] for p in m.get("passes", [])]
    body = [f"<h1>ember report: bundle {escape(name)}</h1>",
            _table(["", ""], summary, "summary"),
            "<h2>Memory regions</h2>", _memory(m),
            "<h2>Activation memory plan</h2><p>Each rectangle is one activation buffer: its lifetime (node steps) "
            "across, its offset range in the activations region down; the dashed line is the lower bound.</p>",
            f'<div class="scroll">{memory_svg(m)}</div>']
    if bench is not None:
        body += ["<h2>Time per operator (ember bench)</h2>", _bench(m, bench)]
    if validation is not None:
        body += ["<h2>Validation</h2>", _validation(validation)]
    body += ["<h2>Optimized graph</h2><p>Hover a box for its name and figures"
             + ("; colour: share of the slowest node's time" if node_ms else "") + ".</p>",
             f'<div class="scroll">{graph_svg(m, node_ms)}</div>',
             "<h2>Nodes</h2>",
             _table(["#", "name", "op", "algorithm", "outputs", "MACs"] + (["ms"] if node_ms else []), nodes, "nodes"),
             "<h2>Passes</h2>", _table(["pass", "seconds", "nodes after"], passes, "passes")]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
            f"<title>ember report: {escape(name)}</title><style>{_CSS}</style></head>\n<body>\n"
            + "\n".join(body) + "\n</body></html>\n")


def _read_json(path: str, flag: str) -> dict[str, Any]:
    try:
        doc = json.loads(Path(path).read_text())
    except OSError as e:
        raise EmberError(f"{flag} {path}: {e.strerror}") from None
    except ValueError as e:
        raise EmberError(f"{flag} {path}: not JSON ({e})") from None
    if not isinstance(doc, dict):
        raise EmberError(f"{flag} {path}: expected a JSON object")
    return doc


def write_report(manifest: dict[str, Any], path: str, bench_json: str | None = None,
                 validation_json: str | None = None) -> None:
    bench = _read_json(bench_json, "--bench") if bench_json else None
    validation = _read_json(validation_json, "--validation") if validation_json else None
    Path(path).write_text(render(manifest, bench, validation), encoding="utf-8")
