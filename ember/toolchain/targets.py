"""The target table: one entry per target, no target branches elsewhere in the code.

Each target says how to reach it with two kinds of compiler: zig's bundled clang (the default cross
compiler, `pip install 'ember[cross]'`), which takes zig target triples and zig CPU names, and a
GCC-compatible compiler of the user's (`--cc arm-none-eabi-gcc`), which takes -mcpu/-march/-mfpu flags.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ember.errors import OptionError


@dataclass(frozen=True)
class FloatABI:
    """One way to pass and compute floats on a target (`--float-abi`)."""

    zig_abi: str  # last part of the zig triple: eabihf, eabi, musleabihf, none, musl ...
    zig_features: str = ""  # appended to the default zig CPU, e.g. "+vfp4d16sp"
    gcc_flags: tuple[str, ...] = ()  # e.g. ("-mfloat-abi=hard", "-mfpu=fpv4-sp-d16")
    fpu: str = "dp"  # none | sp (single precision only) | dp


@dataclass(frozen=True)
class Target:
    name: str
    description: str
    kind: str  # host | linux | mcu | wasm: how a bundle for it is run and checked
    zig_arch: str | None  # None: the host's system compiler, never zig
    zig_os: str = "freestanding"
    cpu: str | None = None  # default --cpu, GCC spelling; None: no CPU flag unless the user gives one
    zig_cpu: str | None = None  # zig's name for the default CPU (default: `cpu` with '-' -> '_')
    cpu_flag: str = "-mcpu={cpu}"  # how a CPU reaches a GCC-compatible compiler
    gcc_flags: tuple[str, ...] = ()  # architecture flags for a GCC-compatible compiler
    pointer_bits: int = 32
    float_abis: dict[str, FloatABI] = field(default_factory=dict)  # the first is the default
    reloc: str = "static"  # default --reloc
    # What --reloc static adds. The host keeps the compiler's default (PIE on Debian), because host
    # bundles must still link into the shared library that the Python runtime loads.
    static_flags: tuple[str, ...] = ("-fno-PIC",)
    endian: str = "little"  # weights.bin is little-endian; only little-endian targets are listed
    # Integer kernel variants (passes/mcu_kernels.py, kernels/qarm*.c): the ARM DSP extension's SMLAD/SXTB16
    # (Cortex-M4/M7/M33/M55), and Helium (MVE, Cortex-M55), which takes precedence (int8_isa). `mul`: a
    # core without DSP (Cortex-M0/M3): kernels/qarm_mul.c (int8 weights in the order of its ARMv6-M and
    # ARMv7-M product loops, qarm.c's columns and requantisation): 1.3x to 4.2x fewer instructions than the
    # portable kernels on MLPerf Tiny's models, in less flash.
    dsp: bool = False
    mve: bool = False
    mul: bool = False

    @property
    def int8_isa(self) -> str:
        """The integer kernel set passes/mcu_kernels.py picks from: "mve", "dsp", "mul" or "" (portable)."""
        return "mve" if self.mve else "dsp" if self.dsp else "mul" if self.mul else ""

    @property
    def default_float_abi(self) -> str:
        return next(iter(self.float_abis))

    def float_abi(self, requested: str | None) -> FloatABI:
        key = requested or self.default_float_abi
        if key not in self.float_abis:
            have = ", ".join(self.float_abis)
            raise OptionError(f"--float-abi {requested} is not available for target '{self.name}' (it has: {have})")
        return self.float_abis[key]

    def zig_triple(self, abi: FloatABI) -> str:
        return f"{self.zig_arch}-{self.zig_os}-{abi.zig_abi}"

    def zig_mcpu(self, cpu: str | None, abi: FloatABI) -> str:
        """zig names CPUs with underscores; the FPU features belong to the default CPU only."""
        if cpu is not None and cpu != self.cpu:
            return cpu.replace("-", "_")
        base = self.zig_cpu or (self.cpu or "generic").replace("-", "_")
        return base + abi.zig_features


_ARM_SOFT = FloatABI("eabi", gcc_flags=("-mfloat-abi=soft",), fpu="none")


def _cortex_m(core: str, arch: str, description: str, fpu_features: str, fpu_flag: str | None,
              fpu: str = "sp", zig_cpu: str | None = None, dsp: bool = False, mve: bool = False,
              mul: bool = False) -> Target:
    abis = {"soft": _ARM_SOFT}
    if fpu_flag is not None:
        hard = FloatABI("eabihf", fpu_features, ("-mfloat-abi=hard", f"-mfpu={fpu_flag}"), fpu)
        abis = {"hard": hard, "soft": _ARM_SOFT}
    return Target(f"cortex-{core}", description, "mcu", arch, cpu=f"cortex-{core}", zig_cpu=zig_cpu,
                  gcc_flags=("-mthumb",), float_abis=abis, dsp=dsp, mve=mve, mul=mul)


_TARGET_LIST = (
    Target("host", "this machine, with the system C compiler", "host", None, zig_os="", cpu="native",
           cpu_flag="-march={cpu}", pointer_bits=64, float_abis={"native": FloatABI("", fpu="dp")}, reloc="pic",
           static_flags=()),
    Target("x86_64", "x86-64 Linux/any OS (baseline x86-64; --cpu znver4, skylake-avx512, ...)", "linux", "x86_64",
           "linux", cpu="x86-64", cpu_flag="-march={cpu}", gcc_flags=("-m64",), pointer_bits=64,
           float_abis={"hard": FloatABI("musl")}, reloc="pic"),
    Target("i386", "32-bit x86 Linux (SSE2 math)", "linux", "x86", "linux", cpu="pentium4", cpu_flag="-march={cpu}",
           gcc_flags=("-m32", "-mfpmath=sse"), float_abis={"hard": FloatABI("musl")}, reloc="pic"),
    Target("aarch64", "64-bit ARM Linux (--cpu cortex-a53, cortex-a72, ...)", "linux", "aarch64", "linux",
           cpu="generic", pointer_bits=64, float_abis={"hard": FloatABI("musl")}, reloc="pic"),
    Target("armv7", "32-bit ARMv7-A Linux, hard float (Debian armhf: VFPv3-D16; --cpu cortex-a7 for NEON)",
           "linux", "arm", "linux", zig_cpu="generic", gcc_flags=("-march=armv7-a",),
           float_abis={"hard": FloatABI("musleabihf", "+v7a+vfp3d16", ("-mfloat-abi=hard", "-mfpu=vfpv3-d16")),
                       "soft": FloatABI("musleabi", "+v7a", ("-mfloat-abi=soft",), fpu="none")}, reloc="pic"),
    _cortex_m("m0", "thumb", "Cortex-M0/M0+ (ARMv6-M, no FPU)", "", None, mul=True),
    _cortex_m("m3", "thumb", "Cortex-M3 (ARMv7-M, no FPU, no DSP: STM32F1/F2, LPC17xx)", "", None, mul=True),
    _cortex_m("m4", "thumb", "Cortex-M4F (ARMv7E-M, single-precision FPv4)", "+vfp4d16sp", "fpv4-sp-d16", dsp=True),
    _cortex_m("m7", "thumb", "Cortex-M7 (ARMv7E-M, FPv5 used single precision)", "+fp_armv8d16sp", "fpv5-sp-d16",
              dsp=True),
    # zig's cortex_m33 leaves out the optional DSP extension that GCC's -mcpu=cortex-m33 (and the usual
    # M33 parts) have: int8 kernels need it for SMLAD.
    _cortex_m("m33", "thumb", "Cortex-M33 (ARMv8-M mainline, DSP, single-precision FPv5)", "+fp_armv8d16sp",
              "fpv5-sp-d16", zig_cpu="cortex_m33+dsp", dsp=True),
    _cortex_m("m55", "thumb", "Cortex-M55 (ARMv8.1-M, Helium MVE with float)", "+mve_fp+fp_armv8d16",
              "fpv5-d16", fpu="dp", dsp=True, mve=True),
    Target("riscv32", "32-bit RISC-V bare metal: rv32imac (soft float); --float-abi hard: rv32imafc", "mcu",
           "riscv32", zig_cpu="generic_rv32",
           float_abis={"soft": FloatABI("none", "+m+a+c", ("-march=rv32imac", "-mabi=ilp32"), fpu="none"),
                       "hard": FloatABI("none", "+m+a+c+f", ("-march=rv32imafc", "-mabi=ilp32f"), fpu="sp")}),
    Target("riscv64", "64-bit RISC-V Linux (rv64gc, lp64d)", "linux", "riscv64", "linux", zig_cpu="baseline_rv64",
           pointer_bits=64, float_abis={"hard": FloatABI("musl", gcc_flags=("-march=rv64gc", "-mabi=lp64d"))},
           reloc="pic"),
    Target("wasm32", "WebAssembly (32-bit linear memory)", "wasm", "wasm32", zig_cpu="generic",
           float_abis={"hard": FloatABI("none")}),
)
TARGETS: dict[str, Target] = {t.name: t for t in _TARGET_LIST}


def get_target(name: str) -> Target:
    try:
        return TARGETS[name]
    except KeyError:
        raise OptionError(f"unknown target '{name}'; known: {', '.join(TARGETS)}") from None
