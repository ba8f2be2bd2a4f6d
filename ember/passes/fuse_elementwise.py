"""Fuse chains of elementwise (`expr`) nodes into one FusedElementwise node: one loop, no intermediates.

A producer is absorbed into its consumer when the value between them has exactly one consumer, is
not a graph output, and has as many elements as the consumer's output. The last condition keeps a
broadcast producer (say `exp` of a [1,C] row feeding a [N,C] add) unfused, since fused it would be
recomputed for every output element; with it, every leaf of a fused chain broadcasts to the final
output shape and each step runs once per output element, as it did unfused.
"""

from __future__ import annotations

from ember.ir.graph import Graph, Node, Value
from ember.ops import registry


def _is_expr(node: Node) -> bool:
    if node.op == "FusedElementwise":
        return True
    op = registry.get(node.op)
    return op.expr is not None and len(node.outputs) == 1 and node.outputs[0] is not None


def _broadcasts_to(shape: tuple[int, ...], out: tuple[int, ...]) -> bool:
    if len(shape) > len(out):
        return False
    return all(s in (1, o) for s, o in zip(shape[::-1], out[::-1], strict=False))


def _steps(node: Node) -> list[Node]:
    return list(node.attrs["_steps"]) if node.op == "FusedElementwise" else [node]


def fuse_elementwise(graph: Graph) -> None:
    consumers = graph.consumers()
    alive = {id(n) for n in graph.nodes}
    for node in list(graph.nodes):
        if not _is_expr(node):
            continue
        out = node.outputs[0]
        assert out is not None
        steps: list[Node] = []
        leaves: list[Value] = []
        absorbed: list[Node] = []
        for v in node.inputs:
            if v is None:
                continue
            p = v.producer
            fusable = (
                p is not None and id(p) in alive and _is_expr(p)
                and len(consumers.get(id(v), [])) == 1 and not graph.is_output(v)
                and v.type.numel == out.type.numel
                and all(_broadcasts_to(leaf.shape, out.shape) for leaf in p.inputs if leaf is not None)
                and not any(p is a for a in absorbed)
            )
            if fusable:
                assert p is not None
                absorbed.append(p)
                steps += _steps(p)
                leaves += [leaf for leaf in p.inputs if leaf is not None]
            elif p is not None and any(p is a for a in absorbed):
                continue  # a second use of a value the chain computes already (Add(r, r) after a Relu)
            else:
                leaves.append(v)
        if not absorbed:
            continue
        steps += _steps(node)
        uniq: list[Value] = []
        for leaf in leaves:
            if not any(leaf is u for u in uniq):
                uniq.append(leaf)
        fused = Node("FusedElementwise", graph.unique_name(f"fused_{node.name}"), list(uniq), [out],
                     {"_steps": steps})
        position = graph.nodes.index(node)
        for p in absorbed:
            graph.remove_node(p)
        graph.remove_node(node)
        graph.add_node(fused, position - len(absorbed))
        # The leaves are now read by the fused node instead of the nodes it replaced.
        gone = [node, *absorbed]
        alive -= {id(g) for g in gone}
        alive.add(id(fused))
        for leaf in uniq:
            users = [c for c in consumers.get(id(leaf), []) if not any(c is g for g in gone)]
            consumers[id(leaf)] = [*users, fused]
