"""OpDef `evaluate` (the numpy forms passes fold constants with) against the ONNX backend node tests.

Every counted node test whose nodes all map to ops with an `evaluate` is loaded (run-time inputs stay
inputs), then run node by node through `evaluate` alone; the outputs must match the expected ones
shipped with the onnx package (exactly for integers, within the test's tolerance otherwise).
"""

from __future__ import annotations

import numpy as np

from ember.frontends.onnx.loader import load_onnx
from ember.frontends.onnx.ops import lookup
from ember.ir.graph import Graph
from ember.ops import registry
from tests.ops import node_suite


def _evaluable(name: str) -> bool:
    ops = registry.load_all()
    graph = node_suite.all_node_tests()[name].model.graph
    if not all(v.type.HasField("tensor_type") for v in (*graph.input, *graph.output)):
        return False  # sequences and optionals: the frontend resolves them, no op evaluates them
    for n in graph.node:
        entry = lookup(n.op_type, n.domain)
        if entry is None or not entry.ir or ops[entry.ir].evaluate is None:
            return False
        # A node an adapter replaces (frontends/onnx/rewrite.py: the entry's op only holds it) becomes the
        # registered op of its name, when there is one.
        if entry.ir != n.op_type and n.op_type in ops and ops[n.op_type].evaluate is None:
            return False
    return True


CASES = [n for n in node_suite.in_scope()
         if node_suite.exclusion_reason(n) is None and n not in node_suite.KNOWN_FAILURES and _evaluable(n)]


def _run(graph: Graph, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    env = {id(v): feeds[v.name] for v in graph.inputs}
    for node in graph.nodes:
        evaluate = registry.get(node.op).evaluate
        assert evaluate is not None, node.op
        args = [None if v is None else v.const if v.is_const else env[id(v)] for v in node.inputs]
        for v, arr in zip(node.outputs, evaluate(node, args), strict=False):
            if v is not None:
                env[id(v)] = np.asarray(arr)
    out = {name: v.const if v.is_const else env[id(v)] for name, v in zip(graph.output_names, graph.outputs,
                                                                           strict=True)}
    for name, (count, axis) in graph.valid_counts.items():  # value-dependent sizes: the valid entries
        out[name] = np.take(out[name], np.arange(int(out[count])), axis=axis)
    return out


def test_evaluate_matches_node_tests() -> None:
    assert len(CASES) >= 400, f"only {len(CASES)} node tests of evaluable ops"
    failures, checked = [], 0
    for name in CASES:
        case = node_suite.all_node_tests()[name]
        model, feeds, out_names = node_suite.bake_shape_inputs(name)
        graph = load_onnx(model)
        if any(registry.get(n.op).evaluate is None for n in graph.nodes):
            continue  # an adapter chose an op that never folds (training Dropout draws a random mask)
        checked += 1
        got = _run(graph, feeds)
        for out_name, ref in zip(out_names, case.data_sets[0][1], strict=True):
            ref, res = node_suite.as_array(ref), np.asarray(got[out_name])
            if res.shape != ref.shape or res.dtype != ref.dtype:
                failures.append(f"{name} {out_name}: {res.dtype}{list(res.shape)} != {ref.dtype}{list(ref.shape)}")
            elif ref.dtype.kind in "biu":
                if not np.array_equal(res, ref):
                    failures.append(f"{name} {out_name}: values differ")
            elif not np.allclose(res, ref, rtol=case.rtol, atol=case.atol, equal_nan=True):
                failures.append(f"{name} {out_name}: max error {np.nanmax(np.abs(res - ref))}")
    assert checked >= 400, f"only {checked} node tests evaluated"
    assert not failures, f"{len(failures)} of {checked}:\n" + "\n".join(failures[:40])
