"""Structural checks of a graph; the tests run them after every pass."""

from __future__ import annotations

from ember.errors import EmberError
from ember.ir.graph import Graph
from ember.ops import registry


class VerifyError(EmberError):
    """The graph broke an IR invariant (a compiler bug, not a user error)."""


def verify(graph: Graph) -> None:
    """Every subgraph too: it reads only its own formals, constants and values it computes (outer values
    reach it only as the control-flow node's inputs, bound to its formals)."""
    defined = {id(v) for v in graph.inputs}
    ops = registry.load_all()
    for n in graph.nodes:
        if n.subgraphs:
            op = ops.get(n.op)
            if op is None or op.bindings is None:
                raise VerifyError(f"node '{n.name}' holds subgraphs but its op has no bindings")
            for b in op.bindings(n):
                if len(b.inputs) != len(b.graph.inputs) or len(b.outputs) != len(b.graph.outputs):
                    raise VerifyError(f"node '{n.name}': subgraph '{b.graph.name}' does not match its bindings")
                if len(b.graph.output_names) != len(b.graph.outputs):
                    raise VerifyError(f"subgraph '{b.graph.name}': output names and values disagree")
                for v in b.inputs:
                    if v is not None and v.is_const:
                        raise VerifyError(f"node '{n.name}': constant '{v.name}' bound to a subgraph input")
                for formal in b.graph.inputs:
                    if id(formal) in defined:
                        raise VerifyError(f"subgraph '{b.graph.name}' formal '{formal.name}' is an outer value")
                verify(b.graph)
        if n.op not in ops:
            raise VerifyError(f"node '{n.name}': op {n.op} is not registered")
        for i, v in enumerate(n.inputs):
            if v is not None and not v.is_const and id(v) not in defined:
                raise VerifyError(f"node '{n.name}' input {i} ('{v.name}') is used before it is defined")
        for v in n.outputs:
            if v is None:
                continue
            if id(v) in defined:
                raise VerifyError(f"value '{v.name}' is defined twice (again by '{n.name}')")
            if v.producer is not n:
                raise VerifyError(f"value '{v.name}' does not point back to its producer '{n.name}'")
            if any(d < 0 for d in v.shape):
                raise VerifyError(f"value '{v.name}' has a negative dimension {v.shape}")
            defined.add(id(v))
    for v in graph.outputs:
        if not v.is_const and id(v) not in defined:
            raise VerifyError(f"graph output '{v.name}' is never computed")
    if len(graph.output_names) != len(graph.outputs):
        raise VerifyError("graph output names and values disagree")
