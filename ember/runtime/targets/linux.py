"""Run a bundle compiled for a Linux cross target under qemu-user (and the driver wasm.py uses too).

The bundle's own NAME.o, as `ember.compile(model, out, target=T)` built it, is linked unchanged with a
small driver generated here from NAME.json and NAME.h alone (as a user would write it): three
`GLOW_MEM_ALIGN`ed static regions, inputs placed at `GLOW_GET_ADDR(mutableWeight, NAME_<input>)`,
one call of the entry point, outputs read from `GLOW_GET_ADDR(mutableWeight, NAME_<output>)`.

Linux targets (x86_64, i386, aarch64, armv7, riscv64): the driver is freestanding. It has its own
`_start` and a three-argument `syscall` in a few lines of inline assembly per architecture, reads the
weights and inputs from stdin and writes the outputs to stdout. No C library is linked: zig builds
musl (and compiler-rt) from source the first time it links a libc program for an architecture, which
takes 35-65 s per architecture on a fresh 2-core machine (CI), while compiling this driver and linking
it with `-nostdlib` takes well under a second with an empty cache. The one compiler helper a bundle
has needed so far (`__aeabi_idiv`, ARMv7-A without the optional hardware divider) is in the driver;
should a bundle need any other, the driver is linked with zig's compiler-rt instead (~10 s, once per
cache). x86_64 and i386 binaries run natively on an x86-64 host (i386 falls back to qemu-i386 where
the kernel has no 32-bit support); the others run under Debian's qemu-user.

wasm32 (wasm.py): the same driver with exports instead of `_start`, run by the `wasmtime` package.

Both drivers check that the bundle keeps to its own memory: the mutable region (except the inputs)
and the activations start filled with 0xff bytes (NaN as float32) rather than zeros, 64 guard bytes
after each region must be intact after the call, and the constant weights' checksum must not change.
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ember.runtime.targets.common import TargetError
from ember.toolchain.objfile import inspect_object

RUN_TIMEOUT = 120.0  # seconds; MobileNet under qemu-user takes about one
GUARD = 64  # bytes after each region that the bundle must not touch
ZIG = (sys.executable, "-m", "ziglang")

# qemu-user executable per Linux target (Debian package qemu-user; qemu-user-static names them *-static).
QEMU = {"x86_64": "qemu-x86_64", "i386": "qemu-i386", "aarch64": "qemu-aarch64", "armv7": "qemu-arm",
        "riscv64": "qemu-riscv64"}
LINUX_TARGETS = tuple(QEMU)
# Targets this machine runs without an emulator (platform.machine() -> ember targets).
_NATIVE = {"x86_64": ("x86_64", "i386"), "AMD64": ("x86_64", "i386"), "aarch64": ("aarch64",)}

# Symbols the driver defines for the bundle: the four functions a freestanding C compiler may call
# (C11 4p6 / GCC and clang docs), and the compiler helpers that bundles have needed so far. Linking
# needs nothing else unless NAME.o asks for more; then zig's compiler-rt is linked (see link_linux).
_DRIVER_PROVIDES = frozenset({"memcpy", "memmove", "memset", "memcmp", "__aeabi_idiv", "__aeabi_uidiv"})
_LINKER_PROVIDES = frozenset({"_GLOBAL_OFFSET_TABLE_"})  # i386 PIC code refers to it; ld.lld defines it

# Exit statuses of the Linux driver.
DRIVER_STATUS = {2: "stdin ended before the weights and inputs did", 3: "writing the outputs to stdout failed",
           4: "the entry point returned non-zero", 5: "the bundle wrote past the end of a region (guard bytes)",
           6: "the bundle changed its constant weights"}


class CrossRunError(TargetError):
    """Building or running the driver failed; the message says which step and shows its output."""


@dataclass
class CrossRun:
    outputs: dict[str, np.ndarray]
    seconds: float  # wall time of the run itself (emulator start + inference), not of the build
    runner: list[str]  # how the program was started: [] native, ["qemu-arm"], ["wasmtime"]
    build_seconds: float
    log: str = field(repr=False, default="")


# ----------------------------------------------------------------------------- tools
def missing_tools(target: str) -> list[str]:
    """What must be installed to run `target`'s bundles here, as install hints (empty: all there)."""
    missing = []
    if importlib.util.find_spec("ziglang") is None:
        missing.append("zig (pip install ziglang)")
    if target == "wasm32":
        if importlib.util.find_spec("wasmtime") is None:
            missing.append("wasmtime (pip install wasmtime)")
    elif target not in QEMU:
        raise CrossRunError(f"no runner for target '{target}' (have: {', '.join((*QEMU, 'wasm32'))})")
    elif target not in _native_targets() and _qemu(target) is None:
        missing.append(f"{QEMU[target]} (apt-get install qemu-user)")
    return missing


def _native_targets() -> tuple[str, ...]:
    return _NATIVE.get(platform.machine(), ())


def _qemu(target: str) -> str | None:
    return shutil.which(QEMU[target]) or shutil.which(QEMU[target] + "-static")


# ----------------------------------------------------------------------------- public entry points
def run_linux(bundle_dir: Path, target: str, inputs: dict[str, np.ndarray], work: Path) -> dict[str, np.ndarray]:
    """Outputs (by model name) of the bundle in `bundle_dir`, compiled for Linux `target`, run under qemu-user."""
    return run_linux_detailed(bundle_dir, target, inputs, work).outputs


def run_linux_detailed(bundle_dir: Path, target: str, inputs: dict[str, np.ndarray], work: Path,
                       timeout: float = RUN_TIMEOUT) -> CrossRun:
    bundle_dir = Path(bundle_dir).resolve()
    man = bundle_manifest(bundle_dir, target)
    if target not in QEMU:
        raise CrossRunError(f"'{target}' is not a Linux target (have: {', '.join(QEMU)})")
    work.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    exe = link_linux(bundle_dir, man, work)
    build_seconds = time.perf_counter() - start
    stdin = weights_bytes(bundle_dir, man) + b"".join(input_bytes(man, inputs))
    runner: list[str] = []
    if target not in _native_targets():
        qemu = _qemu(target)
        if qemu is None:
            raise CrossRunError(f"{QEMU[target]} not found (apt-get install qemu-user)")
        runner = [qemu]
    start = time.perf_counter()
    try:
        res = _run([*runner, str(exe)], stdin, timeout)
    except OSError as e:
        # A kernel without 32-bit x86 support (CONFIG_IA32_EMULATION off) says ENOEXEC: emulate it.
        qemu = _qemu(target)
        if runner or qemu is None:
            raise CrossRunError(f"cannot run {exe}: {e}") from None
        runner = [qemu]
        start = time.perf_counter()
        res = _run([*runner, str(exe)], stdin, timeout)
    seconds = time.perf_counter() - start
    log = res.stderr.decode(errors="replace")
    if res.returncode != 0:
        why = DRIVER_STATUS.get(res.returncode, "crashed or was killed" if res.returncode < 0 else "failed")
        raise CrossRunError(f"{target}: driver exit status {res.returncode}: {why}\n$ {' '.join([*runner, str(exe)])}"
                            f" < weights+inputs\n--- stderr ---\n{log[-3000:]}")
    return CrossRun(split_outputs(man, res.stdout, target), seconds, runner, build_seconds, log)


# ----------------------------------------------------------------------------- driver source
def driver_source(man: dict, kind: str) -> str:
    """The driver for bundle `man` (its NAME.json); `kind` is "linux" or "wasm"."""
    name, up = man["name"], man["name"].upper()
    ins, outs = man["inputs"], man["outputs"]
    lines = [
        f"/* Test driver ({kind}) for bundle '{name}', generated by ember. Freestanding: */",
        "/* no C library, so it runs wherever NAME.o does. */",
        "#include <stdint.h>",
        "#include <stddef.h>",
        f'#include "{name}.h"',
        "",
        f"#define GUARD {GUARD}",
        "/* C has no empty arrays: a region of size 0 gets one byte. */",
        "#define REGION(size) ((size) > 0 ? (size) : 1)",
        f"#define CONST_SIZE {up}_CONSTANT_MEM_SIZE",
        f"#define MUT_SIZE {up}_MUTABLE_MEM_SIZE",
        f"#define ACT_SIZE {up}_ACTIVATIONS_MEM_SIZE",
        f"GLOW_MEM_ALIGN({up}_MEM_ALIGN) static uint8_t constantWeight[REGION(CONST_SIZE) + GUARD];",
        f"GLOW_MEM_ALIGN({up}_MEM_ALIGN) static uint8_t mutableWeight[REGION(MUT_SIZE) + GUARD];",
        f"GLOW_MEM_ALIGN({up}_MEM_ALIGN) static uint8_t activations[REGION(ACT_SIZE) + GUARD];",
        "",
        "static uint8_t *const input_addr[] = {",
        *[f"    GLOW_GET_ADDR(mutableWeight, {up}_{e['c_name']})," for e in ins],
        "    0};",
        f"static const uint32_t input_bytes[] = {{{', '.join(str(e['bytes']) for e in ins) or '0'}}};",
        "static uint8_t *const output_addr[] = {",
        *[f"    GLOW_GET_ADDR(mutableWeight, {up}_{e['c_name']})," for e in outs],
        "    0};",
        f"static const uint32_t output_bytes[] = {{{', '.join(str(e['bytes']) for e in outs) or '0'}}};",
        f"#define N_INPUTS {len(ins)}",
        f"#define N_OUTPUTS {len(outs)}",
        "",
        _COMMON_C,
        "/* 0: done; 4: the entry point returned non-zero; 5: a region's guard bytes changed;",
        "   6: the constant weights changed. */",
        "static int run_bundle(void) {",
        "    int rc;",
        "    uint32_t sum = checksum(constantWeight, CONST_SIZE);",
        "    fill(mutableWeight + MUT_SIZE, 0xa5, GUARD);",
        "    fill(activations, 0xff, ACT_SIZE);",
        "    fill(activations + ACT_SIZE, 0xa5, GUARD);",
        "    fill(constantWeight + CONST_SIZE, 0xa5, GUARD);",
        f"    rc = {name}(constantWeight, mutableWeight, activations);",
        "    if (rc != 0) return 4;",
        "    if (!guard_ok(constantWeight + CONST_SIZE) || !guard_ok(mutableWeight + MUT_SIZE) ||",
        "        !guard_ok(activations + ACT_SIZE)) return 5;",
        "    if (checksum(constantWeight, CONST_SIZE) != sum) return 6;",
        "    return 0;",
        "}",
        "",
        _LINUX_C if kind == "linux" else _WASM_C,
    ]
    return "\n".join(lines)


# Helpers shared by both drivers. The four memory functions are weak: a bundle may bring its own.
_COMMON_C = r"""
__attribute__((weak)) void *memcpy(void *dst, const void *src, size_t n) {
    uint8_t *d = dst; const uint8_t *s = src;
    while (n--) *d++ = *s++;
    return dst;
}
__attribute__((weak)) void *memmove(void *dst, const void *src, size_t n) {
    uint8_t *d = dst; const uint8_t *s = src;
    if (d < s) { while (n--) *d++ = *s++; }
    else { d += n; s += n; while (n--) *--d = *--s; }
    return dst;
}
__attribute__((weak)) void *memset(void *dst, int c, size_t n) {
    uint8_t *d = dst;
    while (n--) *d++ = (uint8_t)c;
    return dst;
}
__attribute__((weak)) int memcmp(const void *a, const void *b, size_t n) {
    const uint8_t *p = a, *q = b;
    for (; n; --n, ++p, ++q) if (*p != *q) return *p < *q ? -1 : 1;
    return 0;
}

#if defined(__arm__) && !defined(__ARM_ARCH_EXT_IDIV__) && !defined(EMBER_USE_COMPILER_RT)
/* ARMv7-A has no divide instruction unless the core has the optional one: integer division in
   NAME.o becomes a call of these run-time ABI helpers (normally from libgcc or compiler-rt).
   Shift-and-subtract, so that the compiler cannot turn it back into a call of itself. */
static uint32_t udiv32(uint32_t n, uint32_t d) {
    uint32_t q = 0, r = 0;
    int i;
    if (d == 0) return 0xffffffffu; /* undefined behaviour in C: any value will do */
    for (i = 31; i >= 0; --i) {
        r = (r << 1) | ((n >> i) & 1u);
        if (r >= d) { r -= d; q |= 1u << i; }
    }
    return q;
}
__attribute__((weak)) unsigned __aeabi_uidiv(unsigned n, unsigned d) { return udiv32(n, d); }
__attribute__((weak)) int __aeabi_idiv(int n, int d) {
    uint32_t q = udiv32(n < 0 ? 0u - (uint32_t)n : (uint32_t)n, d < 0 ? 0u - (uint32_t)d : (uint32_t)d);
    return (int)((n < 0) != (d < 0) ? 0u - q : q);
}
#endif

/* FNV-1a, to see that the bundle leaves its constant weights alone. */
static uint32_t checksum(const uint8_t *p, size_t n) {
    uint32_t h = 2166136261u;
    while (n--) h = (h ^ *p++) * 16777619u;
    return h;
}
static void fill(uint8_t *p, uint8_t v, size_t n) { while (n--) *p++ = v; }
static int guard_ok(const uint8_t *p) {
    int i;
    for (i = 0; i < GUARD; ++i) if (p[i] != 0xa5) return 0;
    return 1;
}
/* Everything in the mutable region but the inputs starts as 0xff bytes (NaN as float32): an output
   the bundle forgets to write, or a read of a value nobody wrote, shows up as NaN, not as 0. */
static void prefill_mutable(void) { fill(mutableWeight, 0xff, MUT_SIZE); }
"""

_LINUX_C = r"""
/* Linux system calls: number, up to three arguments, result (negative errno on failure). */
#if defined(__x86_64__)
enum { SYS_READ = 0, SYS_WRITE = 1, SYS_EXIT_GROUP = 231 };
static long sys3(long n, long a, long b, long c) {
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return r;
}
/* The kernel leaves rsp 16-byte aligned; a C function expects it 8 past that (after a call). */
__asm__(".text\n.globl _start\n_start:\n xor %ebp, %ebp\n and $-16, %rsp\n call driver_main\n hlt\n");
#elif defined(__i386__)
enum { SYS_READ = 3, SYS_WRITE = 4, SYS_EXIT_GROUP = 252 };
static long sys3(long n, long a, long b, long c) {
    long r;
    __asm__ volatile("int $0x80" : "=a"(r) : "a"(n), "b"(a), "c"(b), "d"(c) : "memory");
    return r;
}
__asm__(".text\n.globl _start\n_start:\n xor %ebp, %ebp\n and $-16, %esp\n call driver_main\n hlt\n");
#elif defined(__aarch64__)
enum { SYS_READ = 63, SYS_WRITE = 64, SYS_EXIT_GROUP = 94 };
static long sys3(long n, long a, long b, long c) {
    register long x8 __asm__("x8") = n;
    register long x0 __asm__("x0") = a;
    register long x1 __asm__("x1") = b;
    register long x2 __asm__("x2") = c;
    __asm__ volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
    return x0;
}
__asm__(".text\n.globl _start\n_start:\n mov x29, #0\n mov x30, #0\n bl driver_main\n brk #0\n");
#elif defined(__arm__)
enum { SYS_READ = 3, SYS_WRITE = 4, SYS_EXIT_GROUP = 248 };
static long sys3(long n, long a, long b, long c) {
    register long r7 __asm__("r7") = n;
    register long r0 __asm__("r0") = a;
    register long r1 __asm__("r1") = b;
    register long r2 __asm__("r2") = c;
    __asm__ volatile("svc #0" : "+r"(r0) : "r"(r7), "r"(r1), "r"(r2) : "memory");
    return r0;
}
/* AAPCS wants sp 8-byte aligned at calls; align to 16 like the other ports. */
__asm__(".text\n.globl _start\n_start:\n mov fp, #0\n mov lr, #0\n mov r0, sp\n bic r0, r0, #15\n mov sp, r0\n"
        " bl driver_main\n udf #0\n");
#elif defined(__riscv) && __riscv_xlen == 64
enum { SYS_READ = 63, SYS_WRITE = 64, SYS_EXIT_GROUP = 94 };
static long sys3(long n, long a, long b, long c) {
    register long a7 __asm__("a7") = n;
    register long a0 __asm__("a0") = a;
    register long a1 __asm__("a1") = b;
    register long a2 __asm__("a2") = c;
    __asm__ volatile("ecall" : "+r"(a0) : "r"(a7), "r"(a1), "r"(a2) : "memory");
    return a0;
}
__asm__(".text\n.globl _start\n_start:\n andi sp, sp, -16\n call driver_main\n unimp\n");
#else
#error "no system call port for this architecture"
#endif

static int read_all(uint8_t *p, size_t n) {
    while (n > 0) {
        long got = sys3(SYS_READ, 0, (long)p, (long)n);
        if (got <= 0) return 0;
        p += got;
        n -= (size_t)got;
    }
    return 1;
}
static int write_all(const uint8_t *p, size_t n) {
    while (n > 0) {
        long put = sys3(SYS_WRITE, 1, (long)p, (long)n);
        if (put <= 0) return 0;
        p += put;
        n -= (size_t)put;
    }
    return 1;
}
static void say(const char *s) {
    size_t n = 0;
    while (s[n]) ++n;
    sys3(SYS_WRITE, 2, (long)s, (long)n);
}
__attribute__((noreturn)) static void quit(int status) {
    for (;;) sys3(SYS_EXIT_GROUP, status, 0, 0);
}

/* stdin: the constant weights, then each input in NAME.json's order; stdout: each output in order. */
__attribute__((noreturn, used)) void driver_main(void) {
    int i, rc;
    prefill_mutable();
    if (!read_all(constantWeight, CONST_SIZE)) { say("short read: weights\n"); quit(2); }
    for (i = 0; i < N_INPUTS; ++i)
        if (!read_all(input_addr[i], input_bytes[i])) { say("short read: input\n"); quit(2); }
    rc = run_bundle();
    if (rc == 4) say("entry point returned non-zero\n");
    if (rc == 5) say("guard bytes after a region changed\n");
    if (rc == 6) say("the constant weights changed\n");
    if (rc != 0) quit(rc);
    for (i = 0; i < N_OUTPUTS; ++i)
        if (!write_all(output_addr[i], output_bytes[i])) quit(3);
    quit(0);
}
"""

_WASM_C = r"""
/* The host (wasmtime) calls ember_prepare, writes the weights and inputs at the addresses these
   return, calls ember_run and reads the outputs. The module imports nothing. */
#define EXPORT(name) __attribute__((export_name(#name)))
EXPORT(ember_prepare) void ember_prepare(void) { prefill_mutable(); }
EXPORT(ember_constant) uint8_t *ember_constant(void) { return constantWeight; }
EXPORT(ember_input) uint8_t *ember_input(int i) { return i >= 0 && i < N_INPUTS ? input_addr[i] : 0; }
EXPORT(ember_output) uint8_t *ember_output(int i) { return i >= 0 && i < N_OUTPUTS ? output_addr[i] : 0; }
EXPORT(ember_input_bytes) uint32_t ember_input_bytes(int i) { return i >= 0 && i < N_INPUTS ? input_bytes[i] : 0; }
EXPORT(ember_output_bytes) uint32_t ember_output_bytes(int i) { return i >= 0 && i < N_OUTPUTS ? output_bytes[i] : 0; }
EXPORT(ember_run) int ember_run(void) { return run_bundle(); }
"""


# ----------------------------------------------------------------------------- build
def zig_flags(man: dict) -> list[str]:
    """-target/-mcpu for the driver: the same CPU and float ABI as the bundle."""
    from ember.toolchain.cc import Compiler, target_flags
    from ember.toolchain.targets import get_target

    info = man.get("target_info", {})
    target = get_target(man["target"])
    abi = target.float_abi(info.get("float_abi"))
    return target_flags(Compiler((*ZIG, "cc"), "zig"), target, abi, info.get("cpu"))


# -fomit-frame-pointer: the ARM system call puts its number in r7, the frame pointer in Thumb code.
DRIVER_CFLAGS = ("-std=c99", "-O2", "-ffreestanding", "-fno-stack-protector", "-fomit-frame-pointer",
                  "-fno-unwind-tables", "-fno-asynchronous-unwind-tables", "-Wall", "-Wextra", "-Werror")


def link_linux(bundle_dir: Path, man: dict, work: Path) -> Path:
    name = man["name"]
    src = work / "driver.c"
    src.write_text(driver_source(man, "linux"))
    exe = work / "driver"
    obj = bundle_dir / f"{name}.o"
    flags = zig_flags(man)
    extra = sorted(set(inspect_object(obj).undefined) - _DRIVER_PROVIDES - _LINKER_PROVIDES)
    if extra:
        # Compiler helpers the driver lacks: link zig's compiler-rt (built once per zig cache, ~10 s).
        # A freestanding OS in the triple makes zig link it without building a C library.
        triple = flags[flags.index("-target") + 1].split("-")
        flags[flags.index("-target") + 1] = "-".join([triple[0], "freestanding", *triple[2:]])
        libs = ["-DEMBER_USE_COMPILER_RT"]
    else:
        libs = ["-nostdlib"]
    cmd = [*ZIG, "cc", *flags, *DRIVER_CFLAGS, "-static", "-fno-PIE", "-no-pie", *libs, "-I", str(bundle_dir),
           "-Wl,-e,_start", str(src), str(obj), "-o", str(exe)]
    build_tool(cmd, work, f"linking the {man['target']} driver")
    return exe


def build_tool(cmd: list[str], work: Path, what: str) -> None:
    with open(work / "build.sh", "a") as f:
        f.write(" ".join(cmd) + "\n")
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=work)
    except OSError as e:
        raise CrossRunError(f"{what}: cannot run {cmd[0]}: {e}") from None
    if res.returncode != 0:
        out = _tail(res.stderr + res.stdout)
        raise CrossRunError(f"{what} failed (exit {res.returncode})\n$ {' '.join(cmd)}\n{out}")


# ----------------------------------------------------------------------------- data
def bundle_manifest(bundle_dir: Path, target: str) -> dict:
    found = sorted(bundle_dir.glob("*.json"))
    if not found:
        raise CrossRunError(f"{bundle_dir}: no NAME.json (not a bundle folder?)")
    man = json.loads(found[0].read_text())
    built_for = man.get("target_info", {}).get("name", man.get("target"))
    if built_for != target:
        raise CrossRunError(f"{bundle_dir}: the bundle was compiled for '{built_for}', not '{target}'")
    if not (bundle_dir / f"{man['name']}.o").exists():
        raise CrossRunError(f"{bundle_dir}: no {man['name']}.o")
    return man


def weights_bytes(bundle_dir: Path, man: dict) -> bytes:
    data = (bundle_dir / f"{man['name']}.weights.bin").read_bytes()
    if len(data) != man["memory"]["constant"]:
        raise CrossRunError(f"{man['name']}.weights.bin: {len(data)} bytes, NAME.json says {man['memory']['constant']}")
    return data


def input_bytes(man: dict, inputs: dict[str, np.ndarray]) -> list[bytes]:
    """Each input's bytes in NAME.json's order, little-endian as every listed target is."""
    out = []
    for e in man["inputs"]:
        if e["name"] not in inputs:
            raise CrossRunError(f"no value given for input '{e['name']}' (have: {', '.join(inputs)})")
        dt = _np_dtype(e["dtype"])
        arr = np.asarray(inputs[e["name"]], dtype=dt)
        if list(arr.shape) != list(e["shape"]):
            raise CrossRunError(f"input '{e['name']}': shape {list(arr.shape)} != {e['shape']}")
        data = np.ascontiguousarray(arr).astype(dt.newbyteorder("<"), copy=False).tobytes()
        assert len(data) == e["bytes"], (e["name"], len(data), e["bytes"])
        out.append(data)
    return out


def split_outputs(man: dict, blob: bytes, where: str) -> dict[str, np.ndarray]:
    want = sum(e["bytes"] for e in man["outputs"])
    if len(blob) != want:
        raise CrossRunError(f"{where}: {len(blob)} output bytes, expected {want}")
    result, pos = {}, 0
    for e in man["outputs"]:
        dt = _np_dtype(e["dtype"]).newbyteorder("<")
        arr = np.frombuffer(blob[pos:pos + e["bytes"]], dt).astype(dt.newbyteorder("="))
        result[e["name"]] = arr.reshape(e["shape"])
        pos += e["bytes"]
    return result


def _run(cmd: list[str], stdin: bytes, timeout: float) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(cmd, input=stdin, capture_output=True, timeout=timeout,
                              env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    except subprocess.TimeoutExpired:
        raise CrossRunError(f"{' '.join(cmd)} did not finish within {timeout:.0f} s") from None


def _np_dtype(short: str) -> np.dtype:
    from ember.ir.dtypes import DType

    return np.dtype(DType.parse(short).np)


def _tail(s: str, n: int = 3000) -> str:
    return s if len(s) <= n else "...\n" + s[-n:]
