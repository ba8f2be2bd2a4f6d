"""A Linux cross target's bundle built from NAME.c in parts (zig's clang compiles each, `zig cc -r` links
them): still one relocatable NAME.o, defining only NAME-prefixed symbols, whose outputs under qemu-user
match the host bundle's (criterion as in test_linux_user.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

import ember
from ember import api
from ember.codegen import bundle as codegen
from tests.cross import require_tools
from tests.support import crossrun
from tests.support.cache import ArtifactCache
from tests.support.models import assert_close, random_inputs


def test_parts_linked_for_aarch64_run_like_the_host_bundle(artifacts: ArtifactCache, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    target = "aarch64"
    require_tools(target, crossrun.missing_tools(target))
    monkeypatch.setattr(codegen, "MIN_PART_WEIGHT", 1)  # LeNet is small: split it all the same
    monkeypatch.setattr(api, "_usable_cores", lambda: 2)  # parts are built only where two cores take them
    path = artifacts.model("lenet")
    out = tmp_path / "bundle"
    ember.compile(path, out, name="lenet", target=target)
    obj = out / "lenet.o"
    with open(obj, "rb") as f:
        elf = ELFFile(f)
        assert elf["e_type"] == "ET_REL" and elf["e_machine"] == "EM_AARCH64"
        defined = {s.name for s in elf.get_section_by_name(".symtab").iter_symbols()
                   if s["st_info"]["bind"] == "STB_GLOBAL" and s["st_shndx"] != "SHN_UNDEF"}
    assert "lenet" in defined and all(s.startswith("lenet_") for s in defined - {"lenet"})
    assert len(defined) > 1  # the parts' functions: hidden globals here (no objcopy for this format)
    x = random_inputs(path, None, seed=5)
    ref = artifacts.bundle("lenet").run(x)
    got = crossrun.run_linux(out, target, x, tmp_path / "run")
    for k in ref:
        assert_close(got[k], ref[k], f"lenet in parts on {target}: output '{k}'", rel=1e-4)
