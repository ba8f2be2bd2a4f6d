"""Run a bundle compiled for a microcontroller target on an emulated board (QEMU, bare metal).

This is what a firmware engineer does with a bundle, minus the board: a `main.c` built from NAME.json
and NAME.h alone puts the constant weights (NAME.weights.txt) in flash as a const array, the mutable
and activation regions in RAM as `GLOW_MEM_ALIGN`ed static arrays, copies the inputs to
`GLOW_GET_ADDR(mutableWeight, NAME_<input>)`, calls the entry point once and prints the output bytes
through semihosting. It is linked with the bundle's own NAME.o (as ember built it for the target)
and the start-up code in firmware/ (shipped with the package), then run under qemu-system-arm / -riscv32.

Executed instructions (`count_instructions`): QEMU runs with `-icount shift=6`, so every instruction
advances the virtual clock by exactly 64 ns. Around the entry-point call only, the firmware reads
SysTick (Cortex-M; it ticks on the core clock, whose frequency is the board's) or minstret (RISC-V,
which QEMU makes the virtual time in ns under -icount), and an empty start/stop pair is measured too and subtracted,
so the count covers the call alone: no boot, no input copies, no printing. (This QEMU ships no TCG
plugins, so the instruction-count plugin is not an option.) The stack high-water mark is the painted
stack's peak use right after the call (main's frame plus everything the entry point used).

Cortex-M firmware is built with Debian's arm-none-eabi-gcc (+ libgcc for soft-float helpers); the
RISC-V firmware with zig's clang (+ zig's compiler-rt). Boards and memory maps: tests/cross/README.md.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ember.runtime.targets.common import TargetError

FIRMWARE = Path(__file__).parent / "firmware"
ICOUNT_SHIFT = 6  # 2**6 ns of virtual time per instruction: more than one tick of any board's core clock
QEMU_TIMEOUT = 120.0  # seconds; the slowest test run (MobileNet on the soft-float M0) takes about 1


@dataclass(frozen=True)
class Board:
    """The QEMU board that stands in for one ember target."""

    machine: str
    core: str  # what QEMU emulates, which may be a superset of the target
    qemu: str  # executable
    linker_script: str  # under FIRMWARE
    flash: str  # where code + weights go (see the linker script)
    ram: str  # where .data/.bss (mutable + activations) and the stack go
    qemu_args: tuple[str, ...] = ()
    cflags: tuple[str, ...] = ()  # extra firmware compiler flags
    # The clock the firmware's counter ticks on: Cortex-M SysTick on the core clock of QEMU's board model
    # (25/20/32 MHz, checked against a loop of known length); RISC-V minstret, which QEMU makes the
    # virtual time in ns under -icount.
    clock_hz: int = 0


_ARM = "qemu-system-arm"
BOARDS: dict[str, Board] = {
    # QEMU has no Cortex-M0 board; the M3 runs ARMv6-M code, and CCR.UNALIGN_TRP makes it fault on
    # unaligned accesses as an M0 would.
    "cortex-m0": Board("mps2-an385", "Cortex-M3", _ARM, "arm/mps2-an385.ld", "SSRAM1 0x00000000 (4 MiB)",
                       "SSRAM2/3 0x20000000 (4 MiB)", cflags=("-DTRAP_UNALIGNED",), clock_hz=25_000_000),
    "cortex-m3": Board("mps2-an385", "Cortex-M3", _ARM, "arm/mps2-an385.ld", "SSRAM1 0x00000000 (4 MiB)",
                       "SSRAM2/3 0x20000000 (4 MiB)", clock_hz=25_000_000),
    "cortex-m4": Board("mps2-an386", "Cortex-M4F", _ARM, "arm/mps2-an386.ld", "SSRAM1 0x00000000 (4 MiB)",
                       "SSRAM2/3 0x20000000 (4 MiB)", clock_hz=25_000_000),
    "cortex-m7": Board("mps2-an500", "Cortex-M7 (FPv5-D16)", _ARM, "arm/mps2-an500.ld", "SSRAM1 0x00000000 (4 MiB)",
                       "SSRAM2/3 0x20000000 (4 MiB)", clock_hz=25_000_000),
    "cortex-m33": Board("mps2-an505", "Cortex-M33 (Secure state)", _ARM, "arm/mps2-an505.ld",
                        "SSRAM1 0x10000000 (4 MiB)", "SSRAM2+3 0x38000000 (4 MiB)", clock_hz=20_000_000),
    "cortex-m55": Board("mps3-an547", "Cortex-M55 with MVE-F (Secure state)", _ARM, "arm/mps3-an547.ld",
                        "vectors+code ITCM 0x10000000 (512 KiB), weights QSPI 0x38000000 (8 MiB)",
                        "ISRAM0+1 0x31000000 (4 MiB)", clock_hz=32_000_000),
    "riscv32": Board("virt", "rv32gc hart, machine mode", "qemu-system-riscv32", "riscv/virt.ld",
                     "DRAM 0x80000000 (16 MiB)", "DRAM 0x81000000 (16 MiB)", qemu_args=("-bios", "none"),
                     clock_hz=1_000_000_000),
}

# Exit statuses the firmware gives (firmware.c and the generated main.c).
_STATUS = {3: "CPU fault/trap (see the FAULT line)", 4: "the entry point returned non-zero"}


class McuError(TargetError):
    """Building or running the firmware failed; the message says which step and shows its output."""


@dataclass
class McuRun:
    outputs: dict[str, np.ndarray]
    seconds: float  # wall time of the QEMU run (boot + inference + output)
    sizes: dict[str, int]  # firmware text (code + read-only data), data, bss; flash = text + data, ram = data + bss
    stack: int  # stack high-water mark right after the entry point returned, bytes
    board: Board
    log: str = field(repr=False, default="")
    instructions: int | None = None  # executed by the entry-point call alone (count_instructions)


def missing_tools(target: str) -> list[str]:
    """What must be installed to run `target`'s bundles here, as install hints (empty: all there)."""
    board = BOARDS[target]
    missing = []
    if shutil.which(board.qemu) is None:
        pkg = "qemu-system-arm" if board.qemu == _ARM else "qemu-system-misc"
        missing.append(f"{board.qemu} (apt-get install {pkg})")
    if board.qemu == _ARM and shutil.which("arm-none-eabi-gcc") is None:
        missing.append("arm-none-eabi-gcc (apt-get install gcc-arm-none-eabi)")
    # zig compiles every cross bundle's NAME.o, and links the RISC-V firmware.
    if importlib.util.find_spec("ziglang") is None:
        missing.append("zig (pip install ziglang)")
    return missing


def run_on_mcu(bundle_dir: Path, target: str, inputs: dict[str, np.ndarray], work: Path) -> dict[str, np.ndarray]:
    """Outputs (by model name) of the bundle in `bundle_dir`, compiled for `target`, run on its board."""
    return run_firmware(bundle_dir, target, inputs, work).outputs


def run_firmware(bundle_dir: Path, target: str, inputs: dict[str, np.ndarray], work: Path,
                 count_instructions: bool = True, timeout: float = QEMU_TIMEOUT,
                 defines: tuple[str, ...] = ()) -> McuRun:
    """Build the firmware for the bundle and run it on QEMU; outputs plus time, sizes, stack use and
    (`count_instructions`) the instructions the entry-point call executed.

    `inputs`: arrays in the bundle's dtypes and shapes, by model name. `defines`: extra -D flags for
    the firmware sources (e.g. LEAVE_FPU_OFF, for a test that must fault).
    """
    bundle_dir = Path(bundle_dir).resolve()
    man = _manifest(bundle_dir)
    built_for = man.get("target_info", {}).get("name", man.get("target"))
    if built_for != target:
        raise McuError(f"{bundle_dir}: the bundle was compiled for '{built_for}', not '{target}'")
    if target not in BOARDS:
        raise McuError(f"no QEMU board for target '{target}' (have: {', '.join(BOARDS)})")
    board = BOARDS[target]
    work.mkdir(parents=True, exist_ok=True)
    (work / "main.c").write_text(main_source(man, inputs))
    elf = work / "firmware.elf"
    _link(bundle_dir, man, board, work, elf, defines)
    sizes = firmware_sizes(elf)
    cmd = [board.qemu, "-M", board.machine, *board.qemu_args, "-display", "none", "-serial", "null",
           "-monitor", "none", "-semihosting-config", "enable=on,target=native", "-kernel", str(elf)]
    if count_instructions:
        cmd[1:1] = ["-icount", f"shift={ICOUNT_SHIFT}"]
    start = time.perf_counter()
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        out = _text(e.stdout) + _text(e.stderr)
        raise McuError(f"{board.machine}: QEMU did not finish within {timeout:.0f} s (hung, or a fault in the "
                       f"fault handler)\n$ {' '.join(cmd)}\n--- output tail ---\n{out[-3000:]}") from None
    seconds = time.perf_counter() - start
    log = res.stdout + res.stderr
    (work / "qemu.log").write_text(log)
    if res.returncode != 0:
        why = _STATUS.get(res.returncode, "QEMU or the firmware failed")
        raise McuError(f"{board.machine}: exit status {res.returncode}: {why}\n$ {' '.join(cmd)}\n"
                       f"--- output tail ---\n{_tail(log)}")
    outputs = _parse_outputs(man, log, board)
    m = re.search(r"^STACK (\d+)$", log, re.M)
    count = _instructions(log, board) if count_instructions else None
    return McuRun(outputs, seconds, sizes, int(m.group(1)) if m else -1, board, log, count)


def _instructions(log: str, board: Board) -> int:
    """The entry-point call's instruction count from the COUNT lines (call, then an empty interval)."""
    found = re.findall(r"^COUNT ([0-9a-f]{8})([0-9a-f]{8}) ([0-9a-f]{8})([0-9a-f]{8})$", log, re.M)
    if not found:
        raise McuError(f"{board.machine}: the firmware printed no instruction count\n{_tail(log)}")
    call, empty = ((int(h, 16) << 32) | int(lo, 16) for h, lo in (found[0][:2], found[0][2:]))
    ticks = call - empty
    # Each tick is 1e9 / clock_hz ns of virtual time; each instruction 2**ICOUNT_SHIFT ns.
    return round(ticks * 1_000_000_000 / (board.clock_hz * 2**ICOUNT_SHIFT))


# ----------------------------------------------------------------------------- main.c
def main_source(man: dict, inputs: dict[str, np.ndarray]) -> str:
    name, up = man["name"], man["name"].upper()
    const_size = man["memory"]["constant"]
    lines = [
        f"/* Firmware main for bundle '{name}', generated by ember/runtime/targets/mcu.py. */",
        "#include <stdint.h>",
        '#include "firmware.h"',
        f'#include "{name}.h"',
        "",
        "/* C has no empty arrays: a region of size 0 gets one byte. */",
        "#define REGION(size) ((size) > 0 ? (size) : 1)",
        "/* Constant weights: read-only, so the linker puts them in flash. */",
        f"GLOW_MEM_ALIGN({up}_MEM_ALIGN) static const uint8_t constantWeight[REGION({up}_CONSTANT_MEM_SIZE)] = {{",
        f'#include "{name}.weights.txt"' if const_size > 0 else "0",
        "};",
        f"GLOW_MEM_ALIGN({up}_MEM_ALIGN) static uint8_t mutableWeight[REGION({up}_MUTABLE_MEM_SIZE)];",
        f"GLOW_MEM_ALIGN({up}_MEM_ALIGN) static uint8_t activations[REGION({up}_ACTIVATIONS_MEM_SIZE)];",
        "",
    ]
    for i, e in enumerate(man["inputs"]):
        if e["name"] not in inputs:
            raise McuError(f"no value given for input '{e['name']}' (have: {', '.join(inputs)})")
        arr = np.asarray(inputs[e["name"]], dtype=_np_dtype(e["dtype"]))
        if list(arr.shape) != list(e["shape"]):
            raise McuError(f"input '{e['name']}': shape {list(arr.shape)} != {e['shape']}")
        # Little-endian bytes, as every listed target is.
        data = np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()
        assert len(data) == e["bytes"], (e["name"], len(data), e["bytes"])
        lines.append(f"static const uint8_t input{i}[REGION({len(data)})] = {{")
        lines += _c_bytes(data)
        lines.append("};")
    lines += [
        "",
        "static void copy(uint8_t *dst, const uint8_t *src, uint32_t n) {",
        "    while (n--) *dst++ = *src++;",
        "}",
        "",
        "int main(void) {",
        "    int rc;",
        "    uint32_t stack, hi, lo, hi0, lo0;",
    ]
    for i, e in enumerate(man["inputs"]):
        lines.append(f"    copy(GLOW_GET_ADDR(mutableWeight, {up}_{e['c_name']}), input{i}, {e['bytes']}u);")
    lines += [
        '    fw_puts("EMBER-MCU start\\n");',
        "    /* The entry point takes a plain pointer (Glow's signature); it only reads the weights. */",
        "    fw_count_start();",
        f"    rc = {name}((uint8_t *)constantWeight, mutableWeight, activations);",
        "    fw_count_stop(&hi, &lo);",
        "    stack = fw_stack_used(); /* before printing: the peak of the inference */",
        "    fw_count_start(); /* an empty interval: what counting itself costs, subtracted by the runner */",
        "    fw_count_stop(&hi0, &lo0);",
        "    if (rc != 0) {",
        '        fw_puts("EMBER-MCU entry point returned ");',
        "        fw_put_dec((uint32_t)rc);",
        '        fw_puts("\\n");',
        "        return 4;",
        "    }",
    ]
    for i, e in enumerate(man["outputs"]):
        lines += [f'    fw_puts("OUT {i} ");',
                  f"    fw_put_bytes_hex(GLOW_GET_ADDR(mutableWeight, {up}_{e['c_name']}), {e['bytes']}u);",
                  '    fw_puts("\\n");']
    lines += ['    fw_puts("STACK ");', "    fw_put_dec(stack);",
              '    fw_puts("\\nCOUNT ");', "    fw_put_hex32(hi);", "    fw_put_hex32(lo);", '    fw_puts(" ");',
              "    fw_put_hex32(hi0);", "    fw_put_hex32(lo0);", '    fw_puts("\\nEMBER-MCU done\\n");',
              "    return 0;", "}", ""]
    return "\n".join(lines)


def _c_bytes(data: bytes, per_line: int = 24) -> list[str]:
    return [", ".join(f"0x{b:02x}" for b in data[i:i + per_line]) + "," for i in range(0, len(data), per_line)] or ["0"]


# ----------------------------------------------------------------------------- build
def arch_flags(man: dict, board: Board) -> tuple[list[str], list[str]]:
    """(compiler command, its target flags): the same CPU and float ABI the bundle was built for."""
    from ember.toolchain.cc import Compiler, target_flags
    from ember.toolchain.targets import get_target

    info = man.get("target_info", {})
    target = get_target(man["target"])
    abi = target.float_abi(info.get("float_abi"))
    cpu = info.get("cpu")
    if board.qemu == _ARM:
        compiler = Compiler(("arm-none-eabi-gcc",), "gcc")
    else:
        compiler = Compiler((sys.executable, "-m", "ziglang", "cc"), "zig")
    return list(compiler.command), target_flags(compiler, target, abi, cpu)


def _link(bundle_dir: Path, man: dict, board: Board, work: Path, elf: Path, defines: tuple[str, ...]) -> None:
    cc, flags = arch_flags(man, board)
    # -fno-tree-vectorize: the firmware's own loops stay scalar, so that the first vector (MVE)
    # instruction a run meets is the bundle's (test_hard_float_bundle_faults_with_fpu_off relies on it).
    common = ["-std=c99", "-O2", "-fno-tree-vectorize", "-ffreestanding", "-Wall", "-Wextra", "-Werror",
              "-ffunction-sections", "-fdata-sections", *board.cflags, *(f"-D{d}" for d in defines),
              "-I", str(FIRMWARE), "-I", str(bundle_dir)]
    script = FIRMWARE / board.linker_script
    sources = [str(FIRMWARE / ("arm/startup.S" if board.qemu == _ARM else "riscv/start.S")),
               str(FIRMWARE / "firmware.c"), str(work / "main.c"), str(bundle_dir / f"{man['name']}.o")]
    if board.qemu == _ARM:
        # -nostdlib drops libgcc too: it is added back last, for the soft-float and division helpers.
        cmd = [*cc, *flags, *common, "-fno-tree-loop-distribute-patterns", "-nostartfiles", "-nostdlib",
               "-T", str(script), "-L", str(script.parent), "-Wl,--gc-sections", f"-Wl,-Map={work / 'firmware.map'}",
               *sources, "-lgcc", "-o", str(elf)]
    else:
        # No -nostdlib: zig links its compiler-rt (soft-float helpers) into executables only without it;
        # a freestanding target has no libc to link anyway.
        cmd = [*cc, *flags, *common, "-T", str(script), "-Wl,--gc-sections", *sources, "-o", str(elf)]
    (work / "build.sh").write_text(" ".join(cmd) + "\n")
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=work)
    except OSError as e:
        raise McuError(f"cannot run {cmd[0]}: {e}") from None
    if res.returncode != 0:
        raise McuError(f"building the {board.machine} firmware failed (exit {res.returncode})\n$ {' '.join(cmd)}\n"
                       f"{_tail(res.stderr + res.stdout)}")


def firmware_sizes(elf: Path) -> dict[str, int]:
    """Berkeley `size` numbers: text (code + read-only data), data (initialized), bss (+ stack); flash, ram."""
    from elftools.elf.constants import SH_FLAGS
    from elftools.elf.elffile import ELFFile

    sizes = {"text": 0, "data": 0, "bss": 0}
    with open(elf, "rb") as f:
        for sec in ELFFile(f).iter_sections():
            flags = sec["sh_flags"]
            if not flags & SH_FLAGS.SHF_ALLOC:
                continue
            if not flags & SH_FLAGS.SHF_WRITE:
                sizes["text"] += sec["sh_size"]
            elif sec["sh_type"] == "SHT_NOBITS":
                sizes["bss"] += sec["sh_size"]
            else:
                sizes["data"] += sec["sh_size"]
    # What the board must hold: flash keeps .data's initial values too, RAM includes the stack reserve.
    sizes["flash"] = sizes["text"] + sizes["data"]
    sizes["ram"] = sizes["data"] + sizes["bss"]
    return sizes


def function_symbols(elf: Path) -> dict[str, tuple[int, int]]:
    """Function name -> (start address without the Thumb bit, size), from an object or executable."""
    from elftools.elf.elffile import ELFFile

    funcs = {}
    with open(elf, "rb") as f:
        symtab = ELFFile(f).get_section_by_name(".symtab")
        for sym in symtab.iter_symbols() if symtab is not None else ():
            if sym["st_info"]["type"] == "STT_FUNC" and sym["st_shndx"] != "SHN_UNDEF" and sym.name:
                funcs[sym.name] = (sym["st_value"] & ~1, sym["st_size"])
    return funcs


def function_at(elf: Path, address: int) -> str | None:
    """The function of a linked firmware that holds `address` (e.g. a fault's pc)."""
    for name, (start, size) in function_symbols(elf).items():
        if start <= address < start + size:
            return name
    return None


# ----------------------------------------------------------------------------- results
def _parse_outputs(man: dict, log: str, board: Board) -> dict[str, np.ndarray]:
    found = dict(re.findall(r"^OUT (\d+) ([0-9a-f]*)$", log, re.M))
    result = {}
    for i, e in enumerate(man["outputs"]):
        hexed = found.get(str(i))
        if hexed is None or len(hexed) != 2 * e["bytes"]:
            got = "nothing" if hexed is None else f"{len(hexed) // 2} bytes"
            raise McuError(f"{board.machine}: output '{e['name']}': expected {e['bytes']} bytes, got {got}\n"
                           f"--- output tail ---\n{_tail(log)}")
        dt = np.dtype(_np_dtype(e["dtype"])).newbyteorder("<")
        result[e["name"]] = np.frombuffer(bytes.fromhex(hexed), dt).astype(dt.newbyteorder("="))\
            .reshape(e["shape"])
    return result


def _manifest(bundle_dir: Path) -> dict:
    found = sorted(bundle_dir.glob("*.json"))
    if not found:
        raise McuError(f"{bundle_dir}: no NAME.json (not a bundle folder?)")
    man = json.loads(found[0].read_text())
    if not (bundle_dir / f"{man['name']}.o").exists():
        raise McuError(f"{bundle_dir}: no {man['name']}.o")
    return man


def _np_dtype(short: str) -> np.dtype:
    from ember.ir.dtypes import DType

    return np.dtype(DType.parse(short).np)


def _text(b: bytes | str | None) -> str:
    return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")


def _tail(s: str, n: int = 3000) -> str:
    return s if len(s) <= n else "...\n" + s[-n:]
