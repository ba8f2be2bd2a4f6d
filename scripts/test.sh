#!/usr/bin/env bash
# Installs everything the tests need, then runs them (README's test command; CI runs this).
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q -e '.[test]'
# PyTorch builds the model-test networks; 2.13.0 is a CPU build (never a plain `pip install torch`).
python -m pip install -q torch==2.13.0
python -m ruff check ember tests examples
python -m pytest -q -n 2 tests
