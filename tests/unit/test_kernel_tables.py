"""The int32 tables Python writes for the kernels and the C macros that name their entries agree: each
macro's index holds the field of the same name (a table reordered on one side only fails here)."""

from __future__ import annotations

import re

from ember.codegen import library
from ember.ops.attention import AttentionGeometry
from ember.ops.conv import ConvGeometry
from ember.ops.pool import PoolGeometry
from ember.ops.qpointwise import QAddParams, QMulParams, QOut


def _macros(block: str, prefix: str) -> dict[str, int]:
    return {m[1]: int(m[2]) for m in re.finditer(rf"#define {prefix}(\w+) (\d+)", library.blocks()[block].text)}


def test_conv_geometry_table_matches_ember_geo_macros() -> None:
    geo = ConvGeometry(3, (4, 5, 6), (7, 8, 9), (10, 11, 12), (13, 14, 15), (16, 17, 18), (19, 20, 21))
    fields = {"IN": geo.in_size, "K": geo.kernel, "OUT": geo.out_size, "STRIDE": geo.strides, "DIL": geo.dilations,
              "PAD": geo.pads_begin}
    macros = _macros("ember_conv_geo", "EMBER_GEO_")
    table = geo.table()
    assert len(table) == macros.pop("SIZE") == 19
    assert table[macros.pop("C")] == geo.channels
    for name, index in macros.items():
        field, dim = name.rsplit("_", 1)
        assert table[index] == fields[field]["DHW".index(dim)], name


def test_pool_geometry_table_matches_ember_pool_macros() -> None:
    geo = PoolGeometry((1, 2, 3), (4, 5, 6), (7, 8, 9), (10, 11, 12), (13, 14, 15), (16, 17, 18), (19, 20, 21))
    fields = {"IN": geo.in_size, "K": geo.kernel, "OUT": geo.out_size, "STRIDE": geo.strides, "DIL": geo.dilations,
              "PAD": geo.pads_begin, "PAD_END": geo.pads_end}
    macros = _macros("ember_pool_geo", "EMBER_POOL_")
    table = geo.table()
    assert len(table) == macros.pop("GEO_SIZE") == 21
    assert len(macros) == 21
    for name, index in macros.items():
        field, dim = name.rsplit("_", 1)
        assert table[index] == fields[field]["DHW".index(dim)], name


def test_qadd_qmul_and_out_tables_match_their_macros() -> None:
    out = QOut(zp=-3, lo=-100, hi=90)
    qadd = QAddParams(za=1, zb=2, ma=3, mb=-4, shift=25, out=out)
    qmul = QMulParams(za=5, zb=6, mult=7, shift=30, out=out)
    values = {"ZY": out.zp, "LO": out.lo, "HI": out.hi}
    for params, block, prefix in ((qadd, "ember_qadd", "EMBER_QADD_"), (qmul, "ember_qmul", "EMBER_QMUL_")):
        macros, table = _macros(block, prefix), params.table()
        assert len(macros) == len(table), block
        for name, index in macros.items():
            assert table[index] == values.get(name, getattr(params, name.lower(), None)), name
    qout = _macros("ember_qround", "EMBER_QOUT_")
    assert [out.table()[qout[n]] for n in ("ZP", "LO", "HI")] == [out.zp, out.lo, out.hi]


def test_attention_geometry_table_matches_ember_att_macros() -> None:
    geo = AttentionGeometry(*range(1, 30))
    macros = _macros("ember_attention_f32", "EMBER_ATT_")
    table = geo.table()
    assert len(table) == macros.pop("SIZE") == 29
    assert len(macros) == 29
    for name, index in macros.items():
        assert table[index] == getattr(geo, name.lower()), name
