"""NAME.c in parts (codegen/bundle.py, toolchain/cc.py): a big model's C is compiled as several translation
units at once and linked into the one NAME.o. LeNet is small, so these tests lower the size a part needs
(MIN_PART_WEIGHT) to make it split; the bundle contract must hold all the same: one NAME.o defining only
the bundle's API, outputs matching onnxruntime, NAME.c still one translation unit when compiled whole,
and warning-free C in every part."""

from __future__ import annotations

from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

import ember
from ember import api
from ember.codegen import bundle as codegen
from ember.config import CompileOptions
from ember.driver import lower
from ember.errors import ToolchainError
from ember.toolchain.cc import compile_object
from ember.toolchain.targets import get_target
from tests.support.cache import ArtifactCache
from tests.support.models import assert_outputs_match, onnxruntime_outputs, random_inputs


@pytest.fixture
def split(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every model big enough for parts (a part needs 1 character of C), on a machine with two cores."""
    monkeypatch.setattr(codegen, "MIN_PART_WEIGHT", 1)
    monkeypatch.setattr(api, "_usable_cores", lambda: 2)


def _global_symbols(obj: Path) -> set[str]:
    with open(obj, "rb") as f:
        symtab = ELFFile(f).get_section_by_name(".symtab")
        return {s.name for s in symtab.iter_symbols()
                if s["st_info"]["bind"] == "STB_GLOBAL" and s["st_shndx"] != "SHN_UNDEF"}


def _pieces(*weights: int) -> list:
    return [codegen._Piece("x" * w, "") for w in weights]


def test_segments_deal_consecutive_nodes_to_parts_in_turn(split: None) -> None:
    pieces = _pieces(*([100] * 12))
    segs = codegen._segments(pieces, 2)
    assert [p for s in segs for p in s.pieces] == pieces  # every node once, in graph order
    assert [s.part for s in segs] == [1, 0] * codegen.ROUNDS  # part 0, the entry's, gets the last
    share = [sum(len(p.body) for s in segs if s.part == k for p in s.pieces) for k in (0, 1)]
    assert share == [600, 600]


def test_small_c_is_one_part_and_heavy_nodes_leave_no_empty_part(monkeypatch: pytest.MonkeyPatch) -> None:
    assert len(codegen._segments(_pieces(*([100] * 12)), 2)) == 1  # far below MIN_PART_WEIGHT
    monkeypatch.setattr(codegen, "MIN_PART_WEIGHT", 10)
    segs = codegen._segments(_pieces(1000, 1, 1000), 4)  # three nodes for four parts: three parts at most
    assert sorted({s.part for s in segs}) == list(range(len({s.part for s in segs})))
    assert len(segs) == 3


def test_split_host_bundle_runs_right_and_exports_only_its_entry(artifacts: ArtifactCache, tmp_path: Path,
                                                                  split: None) -> None:
    path = artifacts.model("lenet")
    b = ember.compile(path, tmp_path / "out", name="lenet")
    manifest = b.manifest
    assert manifest["c_parts"] == 2
    assert "-DEMBER_PART=0" in manifest["compiler"]
    obj = tmp_path / "out" / "lenet.o"
    assert _global_symbols(obj) == {"lenet"}  # the parts' functions became local symbols
    assert not list((tmp_path / "out").glob("*.part*.o"))  # the parts' objects are gone
    x = random_inputs(path, None, seed=3)
    assert_outputs_match(b.run(x), onnxruntime_outputs(path, x))


def test_one_core_compiles_the_whole_file(artifacts: ArtifactCache, tmp_path: Path, split: None,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Where one core is usable the parts would only queue: NAME.c (still cut) is compiled as one unit."""
    monkeypatch.setattr(api, "_usable_cores", lambda: 1)
    path = artifacts.model("lenet")
    b = ember.compile(path, tmp_path / "out", name="lenet")
    assert b.manifest["c_parts"] == 2
    assert not any(a.startswith("-DEMBER_PART") for a in b.manifest["compiler"])
    x = random_inputs(path, None, seed=4)
    assert_outputs_match(b.run(x), onnxruntime_outputs(path, x))


def test_every_part_and_the_whole_file_compile_without_warnings(artifacts: ArtifactCache, tmp_path: Path,
                                                                split: None) -> None:
    """NAME.c compiled whole (as `ember bench`, `ember profile` and users do) and as each part: -Werror."""
    target = get_target("host")
    src = lower(str(artifacts.model("lenet")), CompileOptions(name="lenet"), target=target).sources
    assert src.parts == 2 and "EMBER_PART" in src.c
    (tmp_path / "lenet.c").write_text(src.c)
    (tmp_path / "lenet.h").write_text(src.h)
    abi = target.float_abi(None)
    for parts in (1, 2):
        obj = tmp_path / f"whole{parts}.o"
        compile_object(tmp_path / "lenet.c", obj, target, abi, 1, "pic", None, extra=("-Werror",), parts=parts)
        assert "lenet" in _global_symbols(obj)


def test_a_failing_part_is_one_line_naming_the_error(tmp_path: Path) -> None:
    src = tmp_path / "bad.c"
    src.write_text("#if defined(EMBER_PART) && EMBER_PART == 1\nint broken(void) { return }\n#endif\n"
                   "int fine(void) { return 0; }\n")
    target = get_target("host")
    with pytest.raises(ToolchainError, match=r"compiling bad\.c for host failed: .*error") as e:
        compile_object(src, tmp_path / "bad.o", target, target.float_abi(None), 1, "pic", None, parts=2)
    assert "\n" not in str(e.value)
    assert not list(tmp_path.glob("*.o"))


@pytest.mark.parametrize(("target", "threads"), [("cortex-m4", 1), ("wasm32", 1), ("host", 2)])
def test_no_parts_for_microcontrollers_wasm_or_thread_pools(artifacts: ArtifactCache, split: None, target: str,
                                                            threads: int) -> None:
    """Flash would hold the kernels the parts share twice; a thread pool is one static object."""
    opts = CompileOptions(name="lenet", target=target, threads=threads)
    src = lower(str(artifacts.model("lenet")), opts, target=get_target(target)).sources
    assert src.parts == 1 and "EMBER_PART" not in src.c


def test_one_part_c_is_unchanged_by_the_parts_machinery(artifacts: ArtifactCache) -> None:
    """Below the size that splits, NAME.c is the single translation unit it always was (no part guards)."""
    src = lower(str(artifacts.model("lenet")), CompileOptions(name="lenet")).sources
    assert src.parts == 1
    assert "EMBER_PART" not in src.c and "lenet_part" not in src.c
