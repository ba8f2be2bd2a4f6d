"""--dump-graph: the optimized graph as Graphviz dot (names escaped)."""

from __future__ import annotations

from ember.ir.graph import Graph

NL = "\x00"  # line break inside a label, turned into dot's \\n after escaping


def _q(s: str) -> str:
    body = s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ").replace(NL, "\\n")
    return '"' + body + '"'


def to_dot(graph: Graph) -> str:
    lines = [f"digraph {_q(graph.name)} {{", "  rankdir=TB;", "  node [shape=box, fontsize=10];"]
    ids: dict[int, str] = {}
    for i, v in enumerate(graph.inputs):
        ids[id(v)] = f"in{i}"
        lines.append(f"  in{i} [shape=ellipse, label={_q(v.name + NL + str(v.type))}];")
    for i, n in enumerate(graph.nodes):
        lines.append(f"  n{i} [label={_q(n.op + NL + n.name)}];")
        for v in n.inputs:
            if v is not None and id(v) in ids:
                lines.append(f"  {ids[id(v)]} -> n{i} [label={_q(str(v.type))}];")
        for v in n.outputs:
            if v is not None:
                ids[id(v)] = f"n{i}"
    for i, v in enumerate(graph.outputs):
        lines.append(f"  out{i} [shape=ellipse, label={_q(graph.output_names[i] + NL + str(v.type))}];")
        if id(v) in ids:
            lines.append(f"  {ids[id(v)]} -> out{i};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def write_dot(graph: Graph, path: str) -> None:
    with open(path, "w") as f:
        f.write(to_dot(graph))
