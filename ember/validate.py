"""`ember validate`: the bundle side by side with onnxruntime on the same inputs."""

from __future__ import annotations

import numpy as np

from ember.errors import EmberError
from ember.runtime.inputs import load_arrays, random_inputs
from ember.runtime.loader import load


def compare(ref: np.ndarray, got: np.ndarray) -> dict[str, float]:
    r = ref.astype(np.float64).reshape(-1)
    g = got.astype(np.float64).reshape(-1)
    span = float(r.max() - r.min()) if r.size else 0.0
    err = float(np.max(np.abs(r - g))) if r.size else 0.0
    denom = float(np.linalg.norm(r) * np.linalg.norm(g))
    cos = float(np.dot(r, g) / denom) if denom > 0 else (1.0 if err == 0 else 0.0)
    return {"max_abs_error": err, "relative_error": err / span if span > 0 else err, "cosine": cos,
            "top1_agree": float(np.argmax(r) == np.argmax(g)) if r.size else 1.0}


_ORT_TYPES = {"tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
              "tensor(int8)": np.int8, "tensor(int16)": np.int16, "tensor(int32)": np.int32,
              "tensor(int64)": np.int64, "tensor(uint8)": np.uint8, "tensor(uint16)": np.uint16,
              "tensor(uint32)": np.uint32, "tensor(uint64)": np.uint64, "tensor(bool)": np.bool_}


def _frozen_inputs(bundle, sess) -> dict[str, np.ndarray]:
    """The model inputs the bundle was compiled with as constants (--const), for onnxruntime."""
    consts = bundle.manifest.get("options", {}).get("consts", {})
    feeds = {}
    for i in sess.get_inputs():
        if i.name in consts:
            arr = np.asarray(consts[i.name]).astype(_ORT_TYPES.get(i.type, np.float32))
            static = all(isinstance(d, int) for d in i.shape)
            feeds[i.name] = arr.reshape(i.shape) if static and arr.size == np.prod(i.shape) else arr
    return feeds


def validate(model: str, bundle_dir: str, input_specs: list[str], seed: int, max_error: float,
             min_cosine: float) -> bool:
    try:
        import onnxruntime as ort
    except ImportError:
        raise EmberError("ember validate needs onnxruntime: pip install 'ember[validate]'") from None

    bundle = load(bundle_dir)
    feeds = load_arrays(input_specs, [e["name"] for e in bundle.inputs]) if input_specs else random_inputs(
        bundle, seed)
    try:
        sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    except Exception as e:  # onnxruntime raises its own exception types
        raise EmberError(f"{model}: onnxruntime cannot load it ({str(e).splitlines()[0]})") from None
    ref_feeds = {**_frozen_inputs(bundle, sess), **feeds}
    ref = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, ref_feeds), strict=True))
    got = bundle.run(feeds)
    ok = True
    print(f"{'output':<24} {'max abs err':>12} {'rel err':>10} {'cosine':>10} {'top-1':>6}")
    for name, r in ref.items():
        m = compare(np.asarray(r), got[name])
        good = m["relative_error"] <= max_error and m["cosine"] >= min_cosine
        ok &= good
        print(f"{name:<24} {m['max_abs_error']:>12.3g} {m['relative_error']:>10.3g} {m['cosine']:>10.6f} "
              f"{'yes' if m['top1_agree'] else 'no':>6}  {'PASS' if good else 'FAIL'}")
    print("PASS" if ok else f"FAIL (thresholds: rel err <= {max_error}, cosine >= {min_cosine})")
    return ok
