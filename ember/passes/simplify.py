"""Small graph simplifications: identity-like nodes removed, outputs made distinct writable tensors."""

from __future__ import annotations

from ember.ir.graph import Graph, Node

# Ops that forward input 0 unchanged at inference time.
_IDENTITY_LIKE = ("Identity", "Dropout")


def remove_identities(graph: Graph) -> None:
    for node in list(graph.nodes):
        if node.op not in _IDENTITY_LIKE:
            continue
        src, dst = node.inputs[0], node.outputs[0]
        assert src is not None and dst is not None
        graph.remove_node(node)
        graph.replace_uses(dst, src)


def materialize_outputs(graph: Graph) -> None:
    """Each graph output gets its own buffer written by a node: copy constants, inputs and repeats."""
    seen: set[int] = set()
    for i, v in enumerate(graph.outputs):
        repeated = id(v) in seen
        seen.add(id(v))
        if v.is_const or graph.is_input(v) or repeated:
            out = graph.value(graph.output_names[i], v.type)
            graph.add_node(Node("Copy", f"copy_{out.name}", [v], [out]))
            graph.outputs[i] = out
