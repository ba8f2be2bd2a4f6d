"""The bare-metal runner now ships with ember (ember/runtime/targets/mcu.py); tests import it from here."""

from ember.runtime.targets.mcu import (  # noqa: F401 - re-exported for the tests
    BOARDS,
    FIRMWARE,
    Board,
    McuError,
    McuRun,
    firmware_sizes,
    function_at,
    function_symbols,
    main_source,
    missing_tools,
    run_firmware,
    run_on_mcu,
)
