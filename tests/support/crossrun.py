"""The qemu-user and wasmtime runners now ship with ember (ember/runtime/targets/linux.py, wasm.py);
tests import them from here."""

from ember.runtime.targets.linux import (  # noqa: F401 - re-exported for the tests
    LINUX_TARGETS,
    QEMU,
    CrossRun,
    CrossRunError,
    driver_source,
    missing_tools,
    run_linux,
    run_linux_detailed,
)
from ember.runtime.targets.wasm import run_wasm, run_wasm_detailed  # noqa: F401
