#!/usr/bin/env bash
# Installs everything the tests need, then runs them (README's test command; CI runs this).
set -euo pipefail
cd "$(dirname "$0")/.."
# Cross-target tests: QEMU for the Cortex-M boards, RISC-V virt and qemu-user Linux, and the Arm
# embedded toolchain the Cortex-M test firmware is built with (what NXP and ST users have); OpenSSH for
# the --device test, which starts its own sshd on a free port.
APT_PACKAGES="qemu-system-arm qemu-system-misc qemu-user gcc-arm-none-eabi libnewlib-arm-none-eabi chromium openssh-server openssh-client cargo"
if ! dpkg -s $APT_PACKAGES >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $APT_PACKAGES >/dev/null
    else
        echo "warning: not root; install $APT_PACKAGES for the cross-target tests (they skip without them)" >&2
    fi
fi
python -m pip install -q -e '.[test]'
# PyTorch builds the model-test networks; 2.13.0 is a CPU build (never a plain `pip install torch`).
python -m pip install -q torch==2.13.0
python -m ruff check ember tests examples benchmarks scripts
# The layer contract of ARCHITECTURE.md (pyproject.toml [tool.importlinter]).
lint-imports
# The slowest tests are listed so that the CI time budget (25 min on 2 cores) can be watched.
python -m pytest -q -n 2 --durations=40 tests
