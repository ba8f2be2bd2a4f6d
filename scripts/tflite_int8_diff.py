"""How far ember's int8 (and 16x8) bundles are from TFLite on the committed int8 and int16 TFLite fixtures: per
model, the largest
difference in quantization steps (absolute for a float output behind DEQUANTIZE) and how many elements differ
at all, over three random inputs. `--rounding micro` compiles with TFLite Micro's arithmetic and compares with
TFLite Micro's interpreter (models it cannot run are skipped); the default compares with LiteRT's reference
kernels.

    python scripts/tflite_int8_diff.py [--rounding litert|micro]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ember  # noqa: E402
from ember.errors import UnsupportedOperatorError  # noqa: E402
from tests.frontends.test_tflite_int8 import micro_outputs  # noqa: E402
from tests.frontends.tflite_support import FIXTURES, inputs_for, litert, run_ember, run_litert  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounding", choices=("litert", "micro"), default="litert")
    args = ap.parse_args(argv)
    print(f"{'model':32} {'max steps':>9} {'elements differing':>20}")
    for path in sorted([*FIXTURES.glob("*int8*.tflite"), *FIXTURES.glob("*int16*.tflite")]):
        if path.stem.endswith("_state8"):  # TFLite Micro's int8-state SVDF: LiteRT has no kernel for it
            continue
        with tempfile.TemporaryDirectory() as out:
            try:
                bundle = ember.compile(path, out, opt_level=1, tflite_rounding=args.rounding)
            except UnsupportedOperatorError as e:  # an int16 operator ember refuses (op_logistic_int16)
                print(f"{path.stem:32} refused: {str(e)[:60]}")
                continue
            interp = litert(path, reference="reduce_misc" not in path.stem)
            worst, differ, total = 0.0, 0, 0
            try:
                for seed in range(3):
                    xs = inputs_for(interp, seed)
                    interp.reset_all_variables()  # a bundle starts each run from the zero state (SVDF)
                    n_out = len(interp.get_output_details())
                    ref = run_litert(interp, xs) if args.rounding == "litert" else micro_outputs(path, xs, n_out)
                    for r, g in zip(ref, run_ember(bundle, interp, xs), strict=True):
                        d = np.abs(r.astype(np.float64) - g.astype(np.float64))
                        worst, differ, total = max(worst, float(d.max())), differ + int((d > 0).sum()), total + d.size
            except RuntimeError as e:  # an operator TFLite Micro lacks
                print(f"{path.stem:32} skipped: {str(e).splitlines()[0][:60]}")
                continue
            print(f"{path.stem:32} {worst:9.4g} {differ:>10} of {total:<8}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
