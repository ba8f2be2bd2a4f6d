"""quant.c's TFLite requantisations (ember_q_scale_tfl, and ember_qrun's vectorized runs of it) against
ember/frontends/tflite/exact.py's model of TFLite's MultiplyByQuantizedMultiplier, over random sums and
multipliers below and above 1 (TFLite Micro's left shift), both roundings: the C kernels every TFLite int8
layer requantises through compute the same integers as the formula the bit-exact tests validate."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from ember.frontends.tflite.exact import multiply
from ember.ops.qlinear import DOUBLE, SINGLE, tflite_multiplier
from tests.support.cdriver import kernel_library

DRIVER = """
void run(uint8_t *y, const int32_t *acc, int n, int32_t mult, int shift, int32_t zp) {
    ember_qrun(y, acc, n, 0, mult, shift, zp, -128, 127);
}
void run16(uint8_t *y, const int32_t *acc, int n, int32_t mult, int shift, int32_t zp) {
    ember_qrun16(y, 1, acc, n, 0, mult, shift, zp, -128, 127);
}
"""


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    return kernel_library(tmp_path_factory.mktemp("requant"), {"ember_qrun"}, DRIVER, "-O3")


@pytest.mark.parametrize("rounding", [SINGLE, DOUBLE])
def test_qrun_equals_tflite_formula(lib: ctypes.CDLL, rounding: int) -> None:
    rng = np.random.default_rng(rounding)
    for real in [*rng.uniform(1e-4, 0.9, 12), 0.5, 1.0, 1.7, 3.25, 2.0**-20]:
        mult, k = tflite_multiplier(float(real), rounding)
        # sums large enough to reach every rounding case, small enough that TFLite's int32 shift cannot overflow
        bound = min(2**24, int(2**30 / max(real, 1.0)))
        acc = np.concatenate([rng.integers(-bound, bound, 200), np.arange(-40, 40)]).astype(np.int32)
        acc = np.concatenate([acc, (np.arange(-8, 8) << max(k - 2, 0)).astype(np.int32)])  # ties at the shift
        want = np.clip(multiply(acc, float(real), rounding) + 3, -128, 127).astype(np.int8)
        for fn, n in ((lib.run, acc.size), (lib.run16, 16)):
            y = np.zeros(n, np.int8)
            fn(y.ctypes.data_as(ctypes.c_void_p), acc.ctypes.data_as(ctypes.c_void_p), n, mult, k + 64 * rounding, 3)
            np.testing.assert_array_equal(y, want[:n], err_msg=f"real {real}, rounding {rounding}, {fn.__name__}")
