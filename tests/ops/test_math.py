"""ember's own float math (kernels/math.c) against numpy's float64, in ulp of the float32 result.

A small C program, built from the library blocks with the bundle's flags, evaluates each function
over every 4099th float32 bit pattern (all magnitudes and signs: zeros, denormals, huge values) plus
edge cases (±0, ±inf, NaN, the largest finite floats, halfway points). The bounds are the ones
stated in math.c; NaN must give NaN and infinities must match exactly.
"""

from __future__ import annotations

import math
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from ember.codegen import library

FUNCS = ("expf", "logf", "tanhf", "erff", "sinf", "cosf", "sigmoidf", "sqrtf", "expm1f", "floorf", "ceilf",
         "rintf", "log1pf", "tanf", "atanf", "asinf", "acosf", "sinhf", "coshf", "asinhf", "acoshf", "atanhf",
         "geluf")
BLOCKS = {"ember_expf", "ember_logf", "ember_tanhf", "ember_erff", "ember_sincosf", "ember_sigmoidf",
          "ember_powf", "ember_sqrtf", "ember_expm1f", "ember_floorf", "ember_ceilf", "ember_rintf", "ember_log1pf",
          "ember_tanf", "ember_atanf", "ember_asinf", "ember_acosf", "ember_sinhf", "ember_coshf", "ember_asinhf",
          "ember_acoshf", "ember_atanhf", "ember_fmodf", "ember_fmod", "ember_geluf"}

_erf = np.vectorize(math.erf, otypes=[np.float64])

# function -> (numpy float64 reference, max error in ulp, input filter for the accurate range)
CASES = {
    "expf": (np.exp, 2.0, None),
    "logf": (np.log, 2.0, None),
    "tanhf": (np.tanh, 3.0, None),
    "erff": (_erf, 3.0, None),
    "sinf": (np.sin, 3.0, lambda x: np.abs(x) < 39000),
    "cosf": (np.cos, 3.0, lambda x: np.abs(x) < 39000),
    "sigmoidf": (lambda x: 1.0 / (1.0 + np.exp(-x)), 3.0, None),
    "sqrtf": (np.sqrt, 0.5, None),
    "expm1f": (np.expm1, 2.0, None),
    "floorf": (np.floor, 0.0, None),
    "ceilf": (np.ceil, 0.0, None),
    "rintf": (np.rint, 0.0, None),
    "log1pf": (np.log1p, 3.0, None),
    "tanf": (np.tan, 4.0, lambda x: np.abs(x) < 39000),
    "atanf": (np.arctan, 2.0, None),
    "asinf": (np.arcsin, 3.0, None),
    "acosf": (np.arccos, 3.0, None),
    "sinhf": (np.sinh, 3.0, None),
    "coshf": (np.cosh, 3.0, None),
    "asinhf": (np.arcsinh, 3.0, None),
    "acoshf": (np.arccosh, 3.0, None),
    "atanhf": (np.arctanh, 3.0, None),
}

_MAIN = r"""
int main(int argc, char **argv) {
    const char *f = argv[1];
    uint32_t n, i;
    int binary;
    float *x, *y, *out;
    (void)argc;
    if (fread(&n, sizeof n, 1, stdin) != 1) return 2;
    x = malloc(n * sizeof(float));
    y = malloc(n * sizeof(float));
    out = malloc(n * sizeof(float));
    if (!x || !y || !out || fread(x, sizeof(float), n, stdin) != n) return 2;
    binary = !strcmp(f, "powf") || !strcmp(f, "fmodf") || !strcmp(f, "fmod");
    if (binary && fread(y, sizeof(float), n, stdin) != n) return 2;
    for (i = 0; i < n; ++i) {
        float r = 0.0f;
        if (!strcmp(f, "powf")) r = ember_powf(x[i], y[i]);
        else if (!strcmp(f, "fmodf")) r = ember_fmodf(x[i], y[i]);
        else if (!strcmp(f, "fmod")) r = (float)ember_fmod((double)x[i], (double)y[i]);
%s
        out[i] = r;
    }
    fwrite(out, sizeof(float), n, stdout);
    return 0;
}
"""


@pytest.fixture(scope="module")
def mathprog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler")
    d = tmp_path_factory.mktemp("math")
    calls = "\n".join(f'        else if (!strcmp(f, "{fn}")) r = ember_{fn}(x[i]);' for fn in FUNCS)
    src = ("#include <stdint.h>\n#include <stddef.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
           "#include <string.h>\n" + library.assemble(BLOCKS) + _MAIN % calls)
    (d / "m.c").write_text(src)
    # The bundle's flags, warnings as errors: the kernels must compile clean.
    subprocess.run([cc, "-std=c99", "-O2", "-ffreestanding", "-fno-math-errno", "-Wall", "-Wextra", "-Werror",
                    "-o", str(d / "m"), str(d / "m.c")], check=True, capture_output=True)
    return d / "m"


def _run(prog: Path, fn: str, x: np.ndarray, y: np.ndarray | None = None) -> np.ndarray:
    data = np.uint32(len(x)).tobytes() + x.astype(np.float32).tobytes()
    if y is not None:
        data += y.astype(np.float32).tobytes()
    res = subprocess.run([str(prog), fn], input=data, capture_output=True, check=True)
    return np.frombuffer(res.stdout, np.float32)


def _sweep() -> np.ndarray:
    bits = np.arange(0, 2**32, 4099, dtype=np.uint64).astype(np.uint32)
    edge = np.array([0.0, -0.0, 1e-45, -1e-45, 1e-40, -1e-40, 1.17549435e-38, np.inf, -np.inf, np.nan,
                     3.4028235e38, -3.4028235e38, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 88.72, 88.73, -103.9,
                     -104.0, 8388607.5, -8388607.5, 1e-8, -1e-8], np.float32)
    return np.concatenate([bits.view(np.float32), edge])


def ulp_error(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|got - ref| in units of the float32 spacing at ref; inf where NaN/inf do not match."""
    ref32 = ref.astype(np.float32)
    same = (got == ref32) | (np.isnan(got) & np.isnan(ref32))
    spacing = np.maximum(np.spacing(np.abs(ref32)).astype(np.float64), 2.0**-149)
    with np.errstate(invalid="ignore"):
        err = np.abs(got.astype(np.float64) - ref) / spacing
    err[same] = 0.0
    err[np.isnan(err)] = np.inf
    return err


@pytest.mark.parametrize("fn", [f for f in FUNCS if f in CASES])
def test_unary_accuracy(mathprog: Path, fn: str) -> None:
    ref_fn, bound, keep = CASES[fn]
    x = _sweep()
    if keep is not None:
        x = x[keep(x) | ~np.isfinite(x)]
    got = _run(mathprog, fn, x)
    with np.errstate(all="ignore"):
        ref = ref_fn(x.astype(np.float64))
    err = ulp_error(got, ref)
    i = int(np.argmax(err))
    assert err[i] <= bound, f"{fn}({x[i]!r}) = {got[i]!r}, expected {ref[i]!r}: {err[i]:.2f} ulp > {bound}"


def test_powf_accuracy(mathprog: Path) -> None:
    rng = np.random.default_rng(0)
    n = 200_000
    x = np.concatenate([rng.uniform(0, 4, n), np.exp(rng.uniform(-20, 20, n)), -rng.uniform(0, 4, n)])
    y = np.concatenate([rng.uniform(-8, 8, n), rng.uniform(-4, 4, n), rng.integers(-8, 9, n)])
    x, y = x.astype(np.float32), y.astype(np.float32)
    got = _run(mathprog, "powf", x, y)
    with np.errstate(all="ignore"):
        ref = np.power(x.astype(np.float64), y.astype(np.float64))
    normal = np.isfinite(ref) & (np.abs(ref) < 3e38) & (np.abs(ref) > 1.2e-38)
    err = ulp_error(got[normal], ref[normal])
    i = int(np.argmax(err))
    assert err[i] <= 8.0, f"powf({x[normal][i]!r}, {y[normal][i]!r}): {err[i]:.2f} ulp"


def test_powf_special_and_exact(mathprog: Path) -> None:
    x = np.array([3, 2, -2, -2, 0, 0, -0.0, np.inf, np.inf, 0.5, 2, -8, 1, np.nan, 7, 10], np.float32)
    y = np.array([5, -3, 3, 2, 2, -1, -1, 2, -2, np.inf, np.inf, 1 / 3, np.nan, 0, 8, 7], np.float32)
    got = _run(mathprog, "powf", x, y)
    with np.errstate(all="ignore"):
        ref = np.power(x.astype(np.float64), y.astype(np.float64)).astype(np.float32)
    # Integral powers below 2^24 are exact (Pow on integer tensors truncates the float result).
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("fn", ["fmodf", "fmod"])
def test_fmod_exact(mathprog: Path, fn: str) -> None:
    """fmod is exact: bit-for-bit numpy's, signed zeros, subnormals, huge quotients and NaN cases included
    (ember_fmod, the double one, gets the same float inputs widened: its own exponent range and 52-bit
    significands on the same cases)."""
    rng = np.random.default_rng(1)
    n = 100_000
    bits = rng.integers(0, 2**32, (2, n), dtype=np.uint64).astype(np.uint32).view(np.float32)
    x = np.concatenate([bits[0], rng.uniform(-100, 100, n), np.float32([5, -5, 5, -5, 0, -0.0, 1e-45, 3e38, np.inf,
                                                                        7, np.nan, 1, -7.5, 1e-40])])
    y = np.concatenate([bits[1], rng.uniform(-10, 10, n), np.float32([3, 3, -3, -3, 2, 2, 3e-45, 1e-45, 1, np.inf,
                                                                      1, np.nan, 0, 3e-41])])
    x, y = x.astype(np.float32), y.astype(np.float32)
    got = _run(mathprog, fn, x, y)
    with np.errstate(all="ignore"):
        ref = np.fmod(x, y)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    ok = ~np.isnan(ref)
    np.testing.assert_array_equal(got[ok].view(np.uint32), ref[ok].view(np.uint32))


def test_gelu_absolute_error(mathprog: Path) -> None:
    """ember_geluf (Gelu's kernel) is within 2e-7 * |x| + 1 ulp of x * Phi(x) everywhere: the sweep plus a
    dense grid over [-8, 8], where erf is neither 0 nor +-1; NaN -> NaN, +inf -> inf, -inf -> NaN (as the ONNX
    reference's 0.5 * x * (1 + erf(x / sqrt 2)))."""
    x = np.concatenate([_sweep(), np.linspace(-8, 8, 400_001, dtype=np.float32)])
    got = _run(mathprog, "geluf", x)
    x64 = x.astype(np.float64)
    with np.errstate(all="ignore"):
        ref = 0.5 * x64 * (1.0 + _erf(x64 / math.sqrt(2.0)))
    assert np.array_equal(np.isnan(got), np.isnan(ref)), "NaN where the reference has none, or the reverse"
    fin = np.isfinite(ref)
    assert np.array_equal(got[~fin & ~np.isnan(ref)], ref[~fin & ~np.isnan(ref)].astype(np.float32))
    bound = 2e-7 * np.abs(x64[fin]) + np.spacing(np.abs(ref[fin]).astype(np.float32)).astype(np.float64)
    err = np.abs(got[fin].astype(np.float64) - ref[fin])
    i = int(np.argmax(err - bound))
    assert err[i] <= bound[i], f"gelu({x[fin][i]!r}) = {got[fin][i]!r}, expected {ref[fin][i]!r}"
