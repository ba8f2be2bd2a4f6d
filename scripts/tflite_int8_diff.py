"""How far ember's int8 bundles are from LiteRT on the committed int8 TFLite fixtures: per model and output,
the largest difference in quantization steps (absolute for a float output behind DEQUANTIZE) and how many
elements differ at all, over three random inputs.

    python scripts/tflite_int8_diff.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ember  # noqa: E402
from tests.frontends.tflite_support import FIXTURES, inputs_for, litert, run_ember, run_litert  # noqa: E402


def main() -> int:
    print(f"{'model':32} {'max steps':>9} {'elements differing':>20}")
    for path in sorted(FIXTURES.glob("*int8*.tflite")):
        if path.stem.endswith("_state8"):  # TFLite Micro's int8-state SVDF: LiteRT has no kernel for it
            continue
        with tempfile.TemporaryDirectory() as out:
            bundle = ember.compile(path, out)
            interp = litert(path, reference="reduce_misc" not in path.stem)
            worst, differ, total = 0, 0, 0
            for seed in range(3):
                xs = inputs_for(interp, seed)
                interp.reset_all_variables()  # a bundle starts each run from the zero state (SVDF)
                for r, g in zip(run_litert(interp, xs), run_ember(bundle, interp, xs), strict=True):
                    d = np.abs(r.astype(np.float64) - g.astype(np.float64))
                    worst, differ, total = max(worst, float(d.max())), differ + int((d > 0).sum()), total + d.size
            print(f"{path.stem:32} {worst:9.4g} {differ:>10} of {total:<8}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
