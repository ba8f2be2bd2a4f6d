"""Running a TFLite fixture both ways: LiteRT's reference kernels and an ember bundle, on the same inputs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "tflite"


def litert(path: Path, reference: bool = True) -> Any:
    """LiteRT's interpreter on its reference kernels (`reference=False`: its optimized builtin kernels, for
    the rare op whose reference kernel is wrong, e.g. int8 SUM over the last axis)."""
    from ai_edge_litert import interpreter as lite

    try:  # reference kernels: the arithmetic TFLite specifies, not XNNPACK's
        if not reference:
            raise ValueError("optimized kernels asked for")
        interp = lite.Interpreter(model_path=str(path),
                                  experimental_op_resolver_type=lite.OpResolverType.BUILTIN_REF)
    except ValueError:  # an op without a reference kernel (CEIL): the builtin kernels, XNNPACK off
        interp = lite.Interpreter(model_path=str(path),
                                  experimental_op_resolver_type=lite.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    interp.allocate_tensors()
    return interp


def inputs_for(interp: Any, seed: int = 0) -> list[np.ndarray]:
    """Random inputs of the model's input types: floats in [-1, 1], int8 over the quantized range of the
    same real interval."""
    rng = np.random.default_rng(seed)
    out = []
    for d in interp.get_input_details():
        shape, dtype = tuple(d["shape"]), np.dtype(d["dtype"])
        if dtype.kind == "f":
            out.append(rng.uniform(-1, 1, shape).astype(dtype))
        elif not d["quantization"][0]:  # plain integers (ids, indices): small non-negative values
            out.append(rng.integers(0, 5, shape).astype(dtype))
        else:
            scale, zp = d["quantization"]
            lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
            real = rng.uniform(-1, 1, shape)
            out.append(np.clip(np.round(real / scale) + zp, lo, hi).astype(dtype))
    return out


def run_litert(interp: Any, xs: list[np.ndarray]) -> list[np.ndarray]:
    for d, x in zip(interp.get_input_details(), xs, strict=True):
        interp.set_tensor(d["index"], x)
    interp.invoke()
    return [interp.get_tensor(d["index"]).copy() for d in interp.get_output_details()]


def run_ember(bundle: Any, interp: Any, xs: list[np.ndarray]) -> list[np.ndarray]:
    """The bundle's outputs in the order of LiteRT's output details (matched by tensor index -> name)."""
    names = [v["name"] for v in bundle.manifest["inputs"]]
    got = bundle.run(dict(zip(names, xs, strict=True)))
    by_name = dict(got)
    return [by_name[n] for n in _output_names(bundle, interp)]


def run_sanitized(bundle: Any, interp: Any, xs: list[np.ndarray], work: Path,
                  cflags: tuple[str, ...] = ()) -> list[np.ndarray]:
    """run_ember's outputs from the bundle built as C into a driver under AddressSanitizer and
    UndefinedBehaviorSanitizer (-Wall -Wextra -Werror), run in `work`."""
    from tests.support import cdriver

    names = [v["name"] for v in bundle.manifest["inputs"]]
    got = cdriver.run(bundle.path, work, dict(zip(names, xs, strict=True)), sanitize=True, cflags=cflags)
    return [got[n] for n in _output_names(bundle, interp)]


def _output_names(bundle: Any, interp: Any) -> list[str]:
    """LiteRT orders outputs by the subgraph's output list, ember too: the same order, ember's names."""
    return [v["name"] for v in bundle.manifest["outputs"]]
