"""ember over all of the pinned onnx package's backend node tests, not only those of its operators.

Each node test is compiled the way tests/ops/test_onnx_node.py does (inputs that only set parameters
frozen as constants), run, and compared at the test's tolerances. Outcomes: pass, mismatch (ran,
outputs differ), unsupported (an operator or element type ember does not compile), refused (any other
one-line error), error (a traceback: a bug). The rate is reported over all tests and without the ones a
static-memory tensor compiler sets aside (string tensors, training optimizers;
node_suite.set_aside_reason).

    python scripts/node_coverage.py [--jobs 2] [--match REGEX] [--json coverage.json]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import traceback
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

OUTCOMES = ("pass", "mismatch", "unsupported", "refused", "error")


def run_one(name: str) -> tuple[str, str, str]:
    """(test name, outcome, detail)."""
    import onnx

    import ember
    from ember.errors import EmberError, UnsupportedOperatorError
    from tests.ops import node_suite

    with tempfile.TemporaryDirectory(prefix="ember-cov-") as tmp:
        work = Path(tmp)
        try:
            model, feeds, out_names = node_suite.bake_shape_inputs(name)
        except ValueError as e:  # the test's data are sequences or optionals, not arrays
            return name, "unsupported", f"test data that are not tensors ({e})"
        try:
            onnx.save(model, work / "model.onnx")
            bundle = ember.compile(work / "model.onnx", work / "out", opt_level=1,
                                   inputs=node_suite.compile_inputs(model, feeds))
            got = bundle.run(feeds)
        except UnsupportedOperatorError as e:
            return name, "unsupported", str(e)
        except EmberError as e:
            return name, "refused", str(e)
        except Exception:  # noqa: BLE001 - every other exception is a finding, reported with its trace
            return name, "error", traceback.format_exc(limit=3)
        why = node_suite.mismatch(name, got, out_names)
        return (name, "mismatch", why) if why else (name, "pass", "")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--match", default="", help="only node tests whose name matches this regex")
    ap.add_argument("--json", type=Path, help="write every outcome here")
    ap.add_argument("--verbose", action="store_true", help="print every test that does not pass")
    args = ap.parse_args()
    from tests.ops import node_suite

    names = sorted(n for n in node_suite.all_node_tests() if re.search(args.match, n))
    results = []
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for name, outcome, detail in pool.map(run_one, names, chunksize=4):
            results.append((name, outcome, detail, node_suite.set_aside_reason(name)))
            if args.verbose and outcome != "pass":
                print(f"{outcome:11s} {name}: {detail.strip().splitlines()[-1] if detail.strip() else ''}",
                      flush=True)
    counted = [r for r in results if r[3] is None]
    for label, rows in (("all node tests", results), ("without the set-aside ones", counted)):
        counts = Counter(r[1] for r in rows)
        rate = 100.0 * counts["pass"] / max(len(rows), 1)
        print(f"{label}: {len(rows)} tests, {rate:.1f}% pass  " + "  ".join(f"{k} {counts[k]}" for k in OUTCOMES))
    aside = Counter(r[3] for r in results if r[3] is not None)
    print("set aside: " + ", ".join(f"{why} {n}" for why, n in aside.most_common()))
    missing = Counter()
    for _, outcome, detail, _ in results:
        if outcome == "unsupported" and (m := re.search(r"operator '([^']+)'", detail)):
            missing[m.group(1)] += 1
    print("unsupported, most common: " + ", ".join(f"{op} {n}" for op, n in missing.most_common(25)))
    if args.json:
        args.json.write_text(json.dumps([{"test": n, "outcome": o, "detail": d, "set_aside": s}
                                         for n, o, d, s in results], indent=1))
    return 1 if any(r[1] == "error" for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
