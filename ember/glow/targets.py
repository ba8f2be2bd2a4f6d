"""Glow's `-target` (an LLVM triple or architecture) with `-mcpu`, `-float-abi`, `-mattr` and `-code-model`,
mapped onto ember's target table (`ember targets`).

LLVM picks the float ABI from the triple when `-float-abi` is absent: soft for `arm`/`thumb*-none-eabi`,
hard for `*-gnueabihf`/`*eabihf`; ember follows it, because an object of the other ABI does not link
with the user's firmware (the linker compares the EABI attributes)."""

from __future__ import annotations

from dataclasses import dataclass

from ember.errors import OptionError
from ember.toolchain.targets import TARGETS

# Cortex-M cores, by -mcpu, onto the table's targets (cortex-m0plus is an M0 with the same instruction set).
_CORTEX_M = {"cortex-m0": "cortex-m0", "cortex-m0plus": "cortex-m0", "cortex-m4": "cortex-m4",
             "cortex-m7": "cortex-m7", "cortex-m33": "cortex-m33", "cortex-m55": "cortex-m55"}
# The architecture a thumb triple names, and the cores of it that ember has.
_THUMB_ARCH = {"thumbv6m": ("cortex-m0",), "thumbv7em": ("cortex-m4", "cortex-m7"), "thumbv8m.main": ("cortex-m33",),
               "thumbv8.1m.main": ("cortex-m55",)}
# ARMv7-A spellings of a triple's architecture (armv7em/armv7m are microcontroller profiles: they need -mcpu).
_ARMV7_A = {"armv7", "armv7a", "armv7l", "armv7hl", "armv7-a", "thumbv7", "thumbv7a"}
# -mattr features each core has anyway (so asking for them changes nothing).
_IMPLIED = {"cortex-m4": {"+dsp", "+thumb2", "+vfp4d16sp"}, "cortex-m7": {"+dsp", "+thumb2", "+fp-armv8d16sp"},
            "cortex-m33": {"+dsp", "+thumb2", "+fp-armv8d16sp"}, "cortex-m55": {"+dsp", "+thumb2", "+mve", "+mve.fp"},
            "cortex-m0": set(), "aarch64": {"+neon", "+fp-armv8"}, "armv7": {"+vfp3", "+d16"}}
_SIMPLE = {"i386": "i386", "i486": "i386", "i586": "i386", "i686": "i386", "x86": "i386", "x86_64": "x86_64",
           "x86-64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64", "riscv32": "riscv32",
           "riscv64": "riscv64", "wasm32": "wasm32"}


@dataclass(frozen=True)
class TargetChoice:
    target: str
    cpu: str | None
    float_abi: str | None
    notes: tuple[str, ...] = ()


def choose(triple: str | None, mcpu: str | None, float_abi: str | None, mattr: list[str],
           code_model: str | None) -> TargetChoice:
    notes: list[str] = []
    if float_abi not in (None, "hard", "soft", "default"):
        raise OptionError(f"-float-abi={float_abi}: expected hard or soft")
    if float_abi == "default":
        float_abi = None
    if not triple:
        if mcpu and mcpu not in ("native", "host"):
            target, cpu = "host", mcpu
        else:
            target, cpu = "host", None
    else:
        target, cpu, float_abi = _from_triple(triple.lower(), mcpu, float_abi, notes)
    if float_abi is not None and float_abi not in TARGETS[target].float_abis:
        have = ", ".join(TARGETS[target].float_abis)
        raise OptionError(f"-float-abi={float_abi} is not available for {target} (it has: {have})")
    _check_mattr(mattr, target, notes)
    if code_model not in (None, "", "small", "default"):
        raise OptionError(f"-code-model={code_model}: ember bundles use the small code model (code and data "
                          "within 2 GiB); other code models are not available")
    if code_model:
        notes.append(f"-code-model={code_model}: the C compiler's default, as ember always builds")
    return TargetChoice(target, cpu, float_abi, tuple(notes))


def _from_triple(triple: str, mcpu: str | None, float_abi: str | None,
                 notes: list[str]) -> tuple[str, str | None, str | None]:
    parts = triple.split("-")
    arch, rest = parts[0], parts[1:]
    hf = any(p.endswith("hf") for p in rest)
    linux = "linux" in rest
    if arch in _SIMPLE:
        return _SIMPLE[arch], mcpu, float_abi
    if not (arch.startswith("arm") or arch.startswith("thumb")):
        raise OptionError(f"-target={triple}: ember compiles for {', '.join(_known())}; "
                          "see `ember targets`")
    core = (mcpu or "").lower()
    if core in _CORTEX_M:
        target = _CORTEX_M[core]
        allowed = _THUMB_ARCH.get(arch)
        if allowed is not None and target not in allowed:
            raise OptionError(f"-target={triple} is {arch}, which -mcpu={mcpu} is not")
        cpu = None if core == target else core
    elif core.startswith("cortex-a") or (not core and (arch in _ARMV7_A or linux)):
        if arch.startswith("thumbv") and not arch.startswith("thumbv7"):
            raise OptionError(f"-target={triple}: ember's ARM Linux target is ARMv7-A (armv7)")
        target, cpu = "armv7", (core or None)
    elif not core and arch in _THUMB_ARCH and len(_THUMB_ARCH[arch]) == 1:
        target, cpu = _THUMB_ARCH[arch][0], None
    elif not core:
        raise OptionError(f"-target={triple}: name the core with -mcpu (ember has "
                          f"{', '.join(sorted(set(_CORTEX_M)))} and cortex-a* on armv7 Linux)")
    else:
        raise OptionError(f"-mcpu={mcpu}: ember's ARM targets are {', '.join(sorted(set(_CORTEX_M)))} "
                          "and cortex-a* (armv7 Linux); see `ember targets`")
    if float_abi is None:
        float_abi = "hard" if hf else "soft"
        if float_abi == "soft" and "hard" in TARGETS[target].float_abis:
            notes.append(f"no -float-abi: soft, as LLVM (and so Glow) defaults for {triple}; "
                         "-float-abi=hard uses the FPU")
    return target, cpu, float_abi


def _check_mattr(mattr: list[str], target: str, notes: list[str]) -> None:
    if not mattr:
        return
    implied = _IMPLIED.get(target, set())
    extra = [a for a in mattr if a.lower() not in implied]
    if extra:
        raise OptionError(f"-mattr={','.join(extra)}: ember takes the features of {target} from its target table "
                          f"(it has {', '.join(sorted(implied)) or 'no optional features'}); name another core "
                          "with -mcpu instead")
    notes.append(f"-mattr={','.join(mattr)}: {target} has these features already")


def _known() -> list[str]:
    return ["i386", "x86_64", "aarch64", "arm/thumb (-mcpu=cortex-m0/m4/m7/m33/m55, cortex-a*)", "riscv32",
            "riscv64", "wasm32"]
