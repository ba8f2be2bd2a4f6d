"""What a compiled NAME.o needs and occupies: undefined symbols and section sizes (ELF or wasm).

The bundle contract is a freestanding object: the only symbols it may leave undefined are the
compiler's own runtime helpers (soft-float and wide-integer arithmetic from libgcc / compiler-rt),
and never double-precision ones on targets whose FPU is single precision.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ember.errors import ToolchainError

# libgcc / compiler-rt helpers: ARM EABI names (__aeabi_fadd) and the generic ones (__addsf3,
# __fixsfsi, __udivdi3, __extendhfsf2, __gnu_h2f_ieee); and the GOT that 32-bit x86 PIC code addresses.
_HELPER = re.compile(r"^(__aeabi_\w+|__gnu_[hf]2[hf]_ieee|_GLOBAL_OFFSET_TABLE_|__(add|sub|mul|div|neg|cmp|eq|ne|lt|"
                     r"le|gt|ge|unord|extend|trunc|fix|float|ashl|ashr|lshr|mod|umod|udiv|clz|ctz|popcount|parity|"
                     r"bswap|ffs|powi)[a-z]*[0-9]?)$")
# Helpers that take or return a double: the ARM EABI d-functions, f2d/d2f, and generic names with df.
_DOUBLE_HELPER = re.compile(r"^__(aeabi_(d\w+|f2d|[il]2d|ul2d|ui2d|l2d)|\w*df\w*)$")


@dataclass(frozen=True)
class ObjectInfo:
    code: int  # executable bytes
    rodata: int  # read-only data (constant tables), lives in flash
    data: int  # initialized writable data: flash for its image, RAM at run time
    bss: int  # zero-initialized writable data: RAM only
    undefined: tuple[str, ...]

    @property
    def flash(self) -> int:
        return self.code + self.rodata + self.data

    @property
    def ram(self) -> int:
        return self.data + self.bss


def inspect_object(path: Path) -> ObjectInfo:
    head = path.read_bytes()[:4]
    if head == b"\x7fELF":
        return _inspect_elf(path)
    if head == b"\0asm":
        return _inspect_wasm(path.read_bytes())
    raise ToolchainError(f"{path}: neither an ELF nor a wasm object")


def _inspect_elf(path: Path) -> ObjectInfo:
    from elftools.elf.constants import SH_FLAGS
    from elftools.elf.elffile import ELFFile

    sizes = {"code": 0, "rodata": 0, "data": 0, "bss": 0}
    undefined: set[str] = set()
    with open(path, "rb") as f:
        elf = ELFFile(f)
        for sec in elf.iter_sections():
            flags = sec["sh_flags"]
            if not flags & SH_FLAGS.SHF_ALLOC:
                continue
            if flags & SH_FLAGS.SHF_EXECINSTR:
                kind = "code"
            elif not flags & SH_FLAGS.SHF_WRITE:
                kind = "rodata"
            else:
                kind = "bss" if sec["sh_type"] == "SHT_NOBITS" else "data"
            sizes[kind] += sec["sh_size"]
        symtab = elf.get_section_by_name(".symtab")
        for sym in symtab.iter_symbols() if symtab is not None else ():
            if sym.name and sym["st_shndx"] == "SHN_UNDEF":
                undefined.add(sym.name)
    return ObjectInfo(**sizes, undefined=tuple(sorted(undefined)))


def _inspect_wasm(blob: bytes) -> ObjectInfo:
    """Wasm sections: imports are the undefined symbols, code and data what the module carries."""
    code = data = 0
    undefined: list[str] = []
    pos = 8
    while pos < len(blob):
        sec_id = blob[pos]
        size, pos = _leb(blob, pos + 1)
        if sec_id == 2:  # import section: (module, name, kind, ...) entries
            undefined += _wasm_import_names(blob[pos : pos + size])
        elif sec_id == 10:
            code += size
        elif sec_id == 11:
            data += size
        pos += size
    return ObjectInfo(code=code, rodata=data, data=0, bss=0, undefined=tuple(sorted(undefined)))


def _wasm_import_names(sec: bytes) -> list[str]:
    count, pos = _leb(sec, 0)
    names = []
    for _ in range(count):
        n, pos = _leb(sec, pos)
        pos += n  # module name
        n, pos = _leb(sec, pos)
        name = sec[pos : pos + n].decode("utf-8", "replace")
        pos += n
        kind = sec[pos]
        pos += 1
        if kind == 0:  # function: type index
            _, pos = _leb(sec, pos)
            names.append(name)
        elif kind == 1:  # table: reftype + limits
            pos = _skip_limits(sec, pos + 1)
        elif kind == 2:  # memory: limits (linear memory is provided by whoever links the module)
            pos = _skip_limits(sec, pos)
        else:  # global: valtype + mutability
            pos += 2
    return names


def _skip_limits(b: bytes, pos: int) -> int:
    flags = b[pos]
    _, pos = _leb(b, pos + 1)
    if flags & 1:
        _, pos = _leb(b, pos)
    return pos


def _leb(b: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = b[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return result, pos


# A multi-threaded bundle (--threads) also calls POSIX threads: its pool (codegen/kernels/threads.c).
_PTHREAD = re.compile(r"^pthread_\w+$")


def check_freestanding(info: ObjectInfo, obj_name: str, target_name: str, allow_double: bool,
                       threads: bool = False) -> None:
    """Refuse objects that would need a C library, or double-precision soft float where it is banned."""
    foreign = [s for s in info.undefined if not _HELPER.match(s) and not (threads and _PTHREAD.match(s))]
    if foreign:
        raise ToolchainError(f"{obj_name} for {target_name} references {', '.join(foreign[:8])}, which a "
                             "freestanding bundle may not use (compiler flags in --cc?)")
    doubles = [s for s in info.undefined if _DOUBLE_HELPER.match(s)]
    if doubles and not allow_double:
        raise ToolchainError(f"{obj_name} for {target_name} calls double-precision software float "
                             f"({', '.join(doubles[:6])}), which this FPU does not have")
