"""Finding and running the C compiler: the system `cc` for the host, zig's clang for cross targets,
or the user's own GCC-compatible compiler (`--cc`)."""

from __future__ import annotations

import functools
import importlib.util
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ember.errors import ToolchainError
from ember.toolchain.targets import TARGETS, FloatABI, Target

# Freestanding, no math errno (so sqrt is one instruction), no unwind tables or stack protector (both
# would reference a runtime the bundle does not have). -fno-strict-aliasing: the planner reuses one
# activation buffer for tensors of different element types, which type-based alias analysis could
# reorder across. -ffp-contract=fast: a*b+c as one fused multiply-add where the CPU has it (GCC's
# -std=c99 turns contraction off; the matmul tiles run ~6% faster with it). -fno-trapping-math: bundles
# never read floating-point exception flags, and without it GCC will not if-convert the selects of the
# branch-free math functions (erf, exp, tanh), so their loops stay scalar (GELU 6.5x slower; clang's
# default already). It changes no result: no reassociation, only which ops may be speculated.
BASE_FLAGS = ("-std=c99", "-ffp-contract=fast", "-ffreestanding", "-fno-math-errno", "-fno-trapping-math",
              "-fno-strict-aliasing",
              "-fno-unwind-tables", "-fno-asynchronous-unwind-tables", "-fno-stack-protector", "-Wall", "-Wextra",
              "-Werror=double-promotion")
# GCC turns loops into memcpy/memset calls even with -ffreestanding unless told not to; clang does not.
GCC_ONLY_FLAGS = ("-fno-tree-loop-distribute-patterns",)
SANITIZE_FLAGS = ("-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer", "-g")
ZIG_HINT = "pip install 'ember[cross]' (the ziglang package), or give your own compiler with --cc"


@dataclass(frozen=True)
class Compiler:
    command: tuple[str, ...]  # how to run it: ("cc",), (python, "-m", "ziglang", "cc")
    family: str  # gcc | clang | zig
    user_flags: tuple[str, ...] = ()  # the flags given with --cc, passed last so that they win


def find_compiler(target: Target, cc: str | None) -> Compiler:
    """--cc if given; else the system cc for the host and zig's clang for every other target."""
    if cc is not None:
        cmd = tuple(shlex.split(cc))
        if not cmd:
            raise ToolchainError("--cc is empty")
        return Compiler(cmd[:1], _family(_which(cmd[0], "check --cc")), cmd[1:])
    if target.zig_arch is None:
        return Compiler(("cc",), _family(_which("cc", "install gcc or clang (Debian: apt-get install gcc)")))
    if importlib.util.find_spec("ziglang") is None:
        raise ToolchainError(f"target '{target.name}' needs a cross compiler: {ZIG_HINT}")
    return Compiler((sys.executable, "-m", "ziglang", "cc"), "zig")


def _which(program: str, hint: str) -> str:
    path = shutil.which(program)
    if path is None:
        raise ToolchainError(f"C compiler '{program}' not found; {hint}")
    return path


@functools.cache
def _family(path: str) -> str:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "gcc"
    return "clang" if "clang" in out.lower() else "gcc"


def target_flags(compiler: Compiler, target: Target, abi: FloatABI, cpu: str | None) -> list[str]:
    """The flags that select the target's CPU and float ABI, in the compiler's own spelling."""
    if compiler.family == "zig":
        return ["-target", target.zig_triple(abi), f"-mcpu={target.zig_mcpu(cpu, abi)}"]
    flags = list(target.gcc_flags)
    cpu = cpu if cpu is not None else target.cpu
    if cpu is not None:
        flags.append(target.cpu_flag.format(cpu=cpu))
    return flags + list(abi.gcc_flags)


def compile_object(src: Path, obj: Path, target: Target, abi: FloatABI, opt_level: int, reloc: str,
                   cc: str | None, cpu: str | None = None, sanitize: bool = False,
                   extra: tuple[str, ...] = (), parts: int = 1) -> list[str]:
    """Compile one C file to an object; returns the command used (recorded in NAME.json).

    `parts` > 1: the file holds that many translation units (codegen/bundle.py: -DEMBER_PART=p selects
    one); they are compiled at once, each by its own compiler process, and linked into the one object
    `obj` (`cc -r`), whose parts' hidden functions become local symbols where binutils' objcopy is at hand.
    The command returned is then the first part's."""
    compiler = find_compiler(target, cc)
    cmd = [*compiler.command, *BASE_FLAGS, f"-O{opt_level}", *target_flags(compiler, target, abi, cpu)]
    if compiler.family == "gcc":
        cmd += GCC_ONLY_FLAGS
    cmd += ["-fPIC"] if reloc == "pic" else target.static_flags
    if sanitize:
        cmd += SANITIZE_FLAGS
    cmd += [*extra, *compiler.user_flags]
    what = f"compiling {src.name} for {target.name}"
    if parts <= 1:
        cmd += ["-c", str(src), "-o", str(obj)]
        _run(cmd, what)
        return cmd
    part_objs = [obj.with_name(f"{obj.stem}.part{p}.o") for p in range(parts)]
    cmds = [[*cmd, f"-DEMBER_PART={p}", "-c", str(src), "-o", str(o)] for p, o in enumerate(part_objs)]
    try:
        _run_all(cmds, what)
        link = [*compiler.command, *target_flags(compiler, target, abi, cpu), *compiler.user_flags, "-r",
                "-nostdlib", *map(str, part_objs), "-o", str(obj)]
        _run(link, f"linking the parts of {obj.name}")
    finally:
        for o in part_objs:
            o.unlink(missing_ok=True)
    if target.zig_arch is None:  # the host's own object format
        _localize_hidden(obj)
    return cmds[0]


def _localize_hidden(obj: Path) -> None:
    """The parts' hidden functions as local symbols, so that NAME.o defines only the bundle's API: with
    the system's objcopy, for the host's own objects; elsewhere (and without binutils) they stay hidden
    global symbols named NAME_part..., which no shared library exports. An object objcopy cannot rewrite
    is left as it was (it writes a new file and renames it only on success)."""
    objcopy = shutil.which("objcopy")
    if objcopy is not None and obj.read_bytes()[:4] == b"\x7fELF":
        subprocess.run([objcopy, "--localize-hidden", str(obj)], capture_output=True, check=False)


def _run_all(cmds: list[list[str]], what: str) -> None:
    """Run compiler commands at once; the first failure (in command order) is the one reported."""
    procs: list[subprocess.Popen[str]] = []
    try:
        for cmd in cmds:
            try:
                procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
            except OSError as e:
                raise ToolchainError(f"{what}: cannot run {cmd[0]}: {e}") from None
        results = [(p.communicate()[1], p.returncode) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for stderr, rc in results:
        if rc != 0:
            raise ToolchainError(f"{what} failed: {_first_error(stderr)}")


def link_shared(objs: list[Path], out: Path, cc: str | None, sanitize: bool = False,
                libs: tuple[str, ...] = ()) -> None:
    """`libs`: flags after the objects (-pthread for a multi-threaded bundle)."""
    compiler = find_compiler(TARGETS["host"], cc)
    cmd = [*compiler.command, *compiler.user_flags, "-shared", *(SANITIZE_FLAGS if sanitize else ()),
           *map(str, objs), *libs, "-o", str(out)]
    _run(cmd, f"linking {out.name}")


def _run(cmd: list[str], what: str) -> None:
    try:
        res = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        raise ToolchainError(f"{what}: cannot run {cmd[0]}: {e}") from None
    if res.returncode != 0:
        raise ToolchainError(f"{what} failed: {_first_error(res.stderr)}")


def _first_error(stderr: str) -> str:
    return next((ln for ln in stderr.splitlines() if "error" in ln), stderr.strip()[:300])
