"""Outputs whose size depends on values (NonZero, Compress, Unique, NonMaxSuppression).

A static-memory bundle cannot size a buffer at run time, so such an op writes into the static upper
bound of its output and also outputs an int64 scalar count: the entries before it along one axis are the
result, the rest are zeros. When a bounded output is a graph output, its count becomes a graph output
too, named `<output>_count`; NAME.h says so next to the output, NAME.json records it (`valid_count`) and
`Bundle.run` trims the output to its count. A bounded output that other nodes read would hand them the
padding as data, so it is refused with a one-line error.
"""

from __future__ import annotations

from ember.errors import UnsupportedOperatorError
from ember.ir.graph import Graph, Value
from ember.ops import registry


def _through_casts(graph: Graph, v: Value) -> Value:
    """The value a bounded output reaches through Casts that are its only reader (a storage type widened
    around its op): the padding stays padding through a Cast."""
    while True:
        readers = [n for n in graph.nodes if any(i is v for i in n.inputs)]
        if len(readers) != 1 or readers[0].op != "Cast" or readers[0].outputs[0] is None:
            return v
        v = readers[0].outputs[0]


def expose_counts(graph: Graph) -> None:
    """Adds the count of every bounded graph output as a graph output; refuses bounded values other nodes read."""
    readers = {id(v) for n in graph.nodes for v in n.inputs if v is not None}
    for node in graph.nodes:
        counted = registry.get(node.op).counted
        if counted is None:
            continue
        count = node.outputs[-1]
        for index, axis in counted(node).items():
            v = node.outputs[index] if index < len(node.outputs) - 1 else None
            if v is None:
                continue
            v = _through_casts(graph, v)
            if id(v) in readers:
                raise UnsupportedOperatorError(node.op, node.name, f"output '{v.name}' has a size that depends on "
                                               "values; ember compiles it only as a graph output (its static "
                                               "bound and a count of valid entries), not as an input of other nodes")
            for name, out in zip(graph.output_names, graph.outputs, strict=True):
                if out is v and name not in graph.valid_counts:
                    assert count is not None
                    count_name = _free_name(graph, f"{name}_count")
                    if count not in graph.outputs:
                        graph.outputs.append(count)
                        graph.output_names.append(count_name)
                    else:
                        count_name = graph.output_names[graph.outputs.index(count)]
                    graph.valid_counts[name] = (count_name, axis)


def _free_name(graph: Graph, base: str) -> str:
    names = set(graph.output_names) | {v.name for v in graph.inputs}
    name, i = base, 1
    while name in names:
        name, i = f"{base}_{i}", i + 1
    return name
