"""Glow's flag syntax (LLVM's cl::opt): `-name=value`, `-name value`, `--name=value`, booleans as `-name`
or `-name=true|false`, list flags repeated or comma separated; everything else is a positional argument."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

from ember.errors import OptionError


@dataclass(frozen=True)
class Flag:
    name: str
    kind: str  # value | list (repeatable) | csv (repeatable and comma separated) | bool
    help: str
    metavar: str = "VALUE"


@dataclass
class Parsed:
    values: dict[str, Any] = field(default_factory=dict)  # flag name -> str | list[str] | bool
    positional: list[str] = field(default_factory=list)

    def get(self, name: str, default: Any = None) -> Any:
        return self.values.get(name, default)


_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def parse(argv: list[str], flags: list[Flag], aliases: dict[str, str] | None = None) -> Parsed:
    table = {f.name: f for f in flags}
    aliases = aliases or {}
    out = Parsed()
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if not arg.startswith("-") or arg == "-":
            out.positional.append(arg)
            continue
        name, eq, value = arg.lstrip("-").partition("=")
        name = aliases.get(name, name)
        flag = table.get(name)
        if flag is None:
            raise OptionError(f"unknown option '{arg.partition('=')[0]}' (-help lists the options)")
        if flag.kind == "bool":
            if not eq:
                out.values[name] = True
            elif value.lower() in _TRUE | _FALSE:
                out.values[name] = value.lower() in _TRUE
            else:
                raise OptionError(f"-{name}={value}: expected true or false")
            continue
        if not eq:
            if i >= len(argv):
                raise OptionError(f"-{name} needs a value: -{name}={flag.metavar}")
            value = argv[i]
            i += 1
        # eIQ's documentation prints `symmetric_with_power2_scale` as `symmetric_with_power2 scale`: users who
        # copy it get two words; the second is taken back here rather than read as an image or a stray argument.
        if name == "quantization-schema" and value == "symmetric_with_power2" and i < len(argv) and argv[i] == "scale":
            value = "symmetric_with_power2_scale"
            i += 1
        if flag.kind == "value":
            if name in out.values and out.values[name] != value:
                raise OptionError(f"-{name} given twice ({out.values[name]} and {value})")
            out.values[name] = value
        elif flag.kind == "list":
            out.values.setdefault(name, []).append(value)
        else:
            out.values.setdefault(name, []).extend(v.strip() for v in value.split(",") if v.strip())
    return out


def print_help(prog: str, summary: str, flags: list[Flag], usage: str) -> None:
    print(f"OVERVIEW: {summary}\n\nUSAGE: {prog} {usage}\n\nOPTIONS:")
    for f in flags:
        left = f"-{f.name}" if f.kind == "bool" else f"-{f.name}=<{f.metavar}>"
        print(f"  {left:<44} {f.help}")
    sys.stdout.flush()


def help_or_version(a: Parsed, prog: str, summary: str, flags: list[Flag], usage: str) -> bool:
    """-help prints the flags, -version the version; True when one of them was asked for (nothing else runs)."""
    if a.get("help"):
        print_help(prog, summary, flags, usage)
        return True
    if a.get("version"):
        from ember.version import __version__

        print(f"{prog} (ember {__version__}): Glow's command line for ember bundles")
        return True
    return False
