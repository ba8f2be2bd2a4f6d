"""The target table and the toolchain: every target compiles LeNet-5 into a freestanding object of the
right architecture and float ABI, with its flash/RAM footprint in NAME.json.

Running those objects (QEMU, qemu-user, wasmtime) is tests/cross; this file checks what `ember compile
--target` itself promises, and the errors it gives."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

import ember
from ember.errors import BundleError, OptionError, ToolchainError
from ember.toolchain import cc
from ember.toolchain.objfile import ObjectInfo, check_freestanding, inspect_object
from ember.toolchain.targets import TARGETS, get_target

ISSUE_TARGETS = ["host", "x86_64", "i386", "aarch64", "armv7", "cortex-m0", "cortex-m3", "cortex-m4", "cortex-m7",
                 "cortex-m33", "cortex-m55", "riscv32", "riscv64", "wasm32"]
# ELF e_machine per target (wasm objects are checked by their magic).
MACHINE = {"x86_64": "EM_X86_64", "i386": "EM_386", "aarch64": "EM_AARCH64", "armv7": "EM_ARM",
           "cortex-m0": "EM_ARM", "cortex-m3": "EM_ARM", "cortex-m4": "EM_ARM", "cortex-m7": "EM_ARM",
           "cortex-m33": "EM_ARM", "cortex-m55": "EM_ARM", "riscv32": "EM_RISCV", "riscv64": "EM_RISCV"}
EF_ARM_ABI_FLOAT_HARD, EF_ARM_ABI_FLOAT_SOFT = 0x400, 0x200
needs_zig = pytest.mark.skipif(importlib.util.find_spec("ziglang") is None,
                               reason="cross targets need zig: pip install 'ember[cross]'")


def test_the_table_has_every_target_of_the_product() -> None:
    assert list(TARGETS) == ISSUE_TARGETS
    for t in TARGETS.values():
        assert t.float_abis, t.name
        assert t.pointer_bits in (32, 64)
        assert t.endian == "little"  # weights.bin is little-endian


def test_unknown_target_and_float_abi_are_one_line_errors() -> None:
    with pytest.raises(OptionError, match="unknown target 'cortex-m99'; known: host, x86_64"):
        get_target("cortex-m99")
    with pytest.raises(OptionError, match="--float-abi hard is not available for target 'cortex-m0'"):
        get_target("cortex-m0").float_abi("hard")


def test_missing_cross_compiler_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(cc.importlib.util, "find_spec", lambda n: None if n == "ziglang" else real(n))
    with pytest.raises(ToolchainError, match=r"'cortex-m4' needs a cross compiler: pip install 'ember\[cross\]'"):
        cc.find_compiler(get_target("cortex-m4"), None)
    with pytest.raises(ToolchainError, match="C compiler 'no-such-gcc' not found"):
        cc.find_compiler(get_target("cortex-m4"), "no-such-gcc -O2")


def test_user_compiler_gets_gcc_spelled_target_flags_before_its_own() -> None:
    gcc = cc.Compiler(("arm-none-eabi-gcc",), "gcc", ("-Os",))
    t = get_target("cortex-m4")
    assert cc.target_flags(gcc, t, t.float_abi(None), None) == [
        "-mthumb", "-mcpu=cortex-m4", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"]
    assert cc.target_flags(gcc, t, t.float_abi("soft"), None) == ["-mthumb", "-mcpu=cortex-m4", "-mfloat-abi=soft"]
    zig = cc.Compiler(("zig", "cc"), "zig")
    a64 = get_target("aarch64")
    assert cc.target_flags(zig, a64, a64.float_abi(None), "cortex-a72") == [
        "-target", "aarch64-linux-musl", "-mcpu=cortex_a72"]
    assert cc.target_flags(zig, t, t.float_abi(None), None)[-1] == "-mcpu=cortex_m4+vfp4d16sp"


def test_freestanding_check_names_the_libc_symbol_and_the_double_helpers() -> None:
    info = ObjectInfo(code=10, rodata=0, data=0, bss=0, undefined=("__aeabi_fadd", "expf", "memcpy"))
    with pytest.raises(ToolchainError, match="net.o for cortex-m4 references expf, memcpy"):
        check_freestanding(info, "net.o", "cortex-m4", allow_double=False)
    soft = ObjectInfo(code=10, rodata=0, data=0, bss=0, undefined=("__aeabi_fmul", "__addsf3", "__udivdi3"))
    check_freestanding(soft, "net.o", "cortex-m0", allow_double=False)
    dbl = ObjectInfo(code=10, rodata=0, data=0, bss=0, undefined=("__aeabi_dadd", "__aeabi_f2d", "__extendsfdf2"))
    with pytest.raises(ToolchainError, match="double-precision software float .*__aeabi_dadd"):
        check_freestanding(dbl, "net.o", "cortex-m4", allow_double=False)
    check_freestanding(dbl, "net.o", "cortex-m4", allow_double=True)  # a float64 model asked for doubles


@needs_zig
@pytest.mark.parametrize("target", [t for t in ISSUE_TARGETS if t != "host"])
def test_every_target_compiles_lenet_to_a_freestanding_object(artifacts, tmp_path: Path, target: str) -> None:
    bundle = ember.compile(artifacts.model("lenet"), tmp_path / "b", target=target)
    man = json.loads((tmp_path / "b" / "lenet.json").read_text())
    obj = tmp_path / "b" / "lenet.o"
    info = inspect_object(obj)
    if target == "wasm32":
        assert obj.read_bytes()[:4] == b"\0asm"
    else:
        with open(obj, "rb") as f:
            elf = ELFFile(f)
            assert elf["e_machine"] == MACHINE[target]
            assert elf.elfclass == TARGETS[target].pointer_bits
            assert elf.little_endian
            if target.startswith("cortex-m") or target == "armv7":
                hard = target not in ("cortex-m0", "cortex-m3")
                assert elf["e_flags"] & (EF_ARM_ABI_FLOAT_HARD if hard else EF_ARM_ABI_FLOAT_SOFT), hex(elf["e_flags"])
    # Only compiler helpers may stay undefined, and only where there is no FPU to do the work.
    if TARGETS[target].float_abi(None).fpu == "none":
        assert info.undefined and all(s.startswith(("__aeabi_f", "__aeabi_i2f", "__")) for s in info.undefined)
        assert not any("df" in s or s.startswith("__aeabi_d") for s in info.undefined), info.undefined
    elif target == "armv7":  # ARMv7-A without the optional integer divider: libgcc's division helpers
        assert set(info.undefined) <= {"__aeabi_idiv", "__aeabi_uidiv", "__aeabi_idivmod"}, info.undefined
    else:
        assert info.undefined == () or target == "i386", info.undefined  # i386 PIC: _GLOBAL_OFFSET_TABLE_
    fp = man["footprint"]
    mem = man["memory"]
    assert fp["flash"] == info.code + info.rodata + info.data + mem["constant"]
    assert fp["ram"] == mem["mutable"] + mem["activations"] + info.data + info.bss
    assert info.code > 1000 and info.data == 0 and info.bss == 0  # re-entrant: no writable statics
    assert man["target_info"]["name"] == target and bundle.footprint == fp
    with pytest.raises(BundleError, match=f"built for target '{target}'"):
        bundle.run({})


@needs_zig
def test_soft_float_abi_on_an_fpu_core_uses_no_fpu(artifacts, tmp_path: Path) -> None:
    ember.compile(artifacts.model("lenet"), tmp_path / "b", target="cortex-m4", float_abi="soft")
    with open(tmp_path / "b" / "lenet.o", "rb") as f:
        assert ELFFile(f)["e_flags"] & EF_ARM_ABI_FLOAT_SOFT
    assert "__aeabi_fmul" in inspect_object(tmp_path / "b" / "lenet.o").undefined


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None,
                    reason="needs arm-none-eabi-gcc (Debian gcc-arm-none-eabi)")
def test_users_own_compiler_builds_the_bundle(artifacts, tmp_path: Path) -> None:
    ember.compile(artifacts.model("lenet"), tmp_path / "b", target="cortex-m7", cc="arm-none-eabi-gcc -Os")
    man = json.loads((tmp_path / "b" / "lenet.json").read_text())
    cmd = man["compiler"]
    assert cmd[0] == "arm-none-eabi-gcc" and cmd.index("-mcpu=cortex-m7") < cmd.index("-Os")
    assert "-mfpu=fpv5-sp-d16" in cmd and man["footprint"]["undefined_symbols"] == []
    assert str(tmp_path / "b" / "lenet.c") in cmd  # recorded with the bundle's paths, not a temp folder's


def test_cli_reports_flash_and_ram(artifacts, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ember.cli import main

    assert main(["compile", str(artifacts.model("lenet")), "-o", str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    man = json.loads((tmp_path / "b" / "lenet.json").read_text())
    assert f"flash            : {man['footprint']['flash']:>12,} bytes" in out
    assert f"RAM              : {man['footprint']['ram']:>12,} bytes" in out
    assert main(["targets"]) == 0
    assert "cortex-m55" in capsys.readouterr().out
