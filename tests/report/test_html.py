"""The HTML report read back as data: one graph box per optimized node, one rectangle per activation buffer
at the planner's offsets, the tables, escaping, and the CLI's one-line errors."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest

from ember.cli import main
from ember.config import CompileOptions
from ember.driver import lower
from ember.memory.plan import Region
from ember.report.html import render
from tests.cli.helpers import ember
from tests.report.models import NASTY, VALIDATION, bench_doc, compiled

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return compiled(tmp_path_factory.mktemp("report"))


def svg(page: str, svg_id: str) -> ET.Element:
    """The inline SVG with that id, parsed as XML (so it must be well-formed)."""
    m = re.search(rf'<svg [^>]*id="{svg_id}".*?</svg>', page, re.S)
    assert m, svg_id
    return ET.fromstring(m.group(0))


class Tables(HTMLParser):
    """Each <table id=...> as its rows of cell texts."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.current: str | None = None
        self.cell: list[str] | None = None
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "table":
            self.current = dict(attrs)["id"]
            self.tables[self.current] = []
        elif tag == "tr" and self.current:
            self.tables[self.current].append([])
        elif tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.cell is not None and self.current:
            self.tables[self.current][-1].append("".join(self.cell))
            self.cell = None
        elif tag == "table":
            self.current = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)


def tables(page: str) -> Tables:
    t = Tables()
    t.feed(page)
    return t


def test_graph_has_one_box_per_node_and_edges_follow_the_data(built):
    _, _, m = built
    page = render(m)
    root = svg(page, "graph-svg")
    boxes = root.findall(f"{SVG}g[@class='node']")
    assert [int(b.get("data-index")) for b in boxes] == list(range(len(m["nodes"])))
    # Conv (two of them fused with the Relu/Add epilogues or not) keeps the two branches: more than a chain.
    edges = [p for p in root.iter(f"{SVG}path") if p.get("class", "").startswith("edge")]
    n_edges = sum(len(nd["in"]) for nd in m["graph"]["nodes"]) + len(m["outputs"])
    assert len(edges) == n_edges and n_edges > len(m["nodes"]) + 1
    assert len(root.findall(f"{SVG}g[@class='input']")) == 1 and len(root.findall(f"{SVG}g[@class='output']")) == 1
    titles = [b.find(f"{SVG}title").text for b in boxes]
    assert any(NASTY in t for t in titles)  # the name survives, escaped (the XML parsed)
    convs = [nd for nd in m["graph"]["nodes"] if nd.get("algorithm")]
    assert convs and all(nd["macs"] > 0 for nd in convs)
    assert m["graph"]["nodes"][0]["out"] == [["float32", [1, 8, 12, 12]]]


def test_memory_rectangles_are_the_planners_buffers(built):
    model, _, m = built
    page = render(m)
    root = svg(page, "memory-svg")
    rects = root.findall(f"{SVG}rect[@class='buf']")
    got = [(int(r.get("data-start")), int(r.get("data-end")), int(r.get("data-offset")), int(r.get("data-size")))
           for r in rects]
    assert got == [tuple(b[:4]) for b in m["memory_plan"]["buffers"]]
    # Independently of the manifest: every activation value the planner placed has its rectangle.
    lowered = lower(str(model), CompileOptions())
    placed = {off for reg, off in lowered.plan.location.values() if reg is Region.ACTIVATIONS}
    assert placed and placed <= {g[2] for g in got}
    assert max(o + s for _, _, o, s in got) <= m["memory"]["activations"]
    # Drawn where the data says: y grows with the offset, height with the size, on one scale.
    top = max(m["memory"]["activations"], m["memory"]["activations_lower_bound"])
    for r, (_, _, off, size) in zip(rects, got, strict=True):
        assert float(r.get("y")) == pytest.approx(12 + off * 360 / top, abs=0.01)
        assert float(r.get("height")) == pytest.approx(max(size * 360 / top, 0.5), abs=0.01)
    # Buffers alive at the same step never overlap in memory (the picture shows a valid plan).
    for i, (s0, e0, o0, z0) in enumerate(got):
        for s1, e1, o1, z1 in got[i + 1:]:
            if s0 <= e1 and s1 <= e0:
                assert o0 + z0 <= o1 or o1 + z1 <= o0


def test_tables_bench_and_validation(built):
    _, _, m = built
    page = render(m, bench_doc(m), VALIDATION)
    t = tables(page).tables
    assert {"summary", "regions", "op-times", "validation", "nodes", "passes"} <= set(t)
    regions = {row[0]: row[1] for row in t["regions"][1:]}
    assert regions["activations"] == f"{m['memory']['activations']:,}"
    assert regions["activations lower bound"] == f"{m['memory']['activations_lower_bound']:,}"
    assert len(t["nodes"]) == 1 + len(m["nodes"]) and t["nodes"][0][-1] == "ms"
    assert sum(int(r[1]) for r in t["op-times"][1:]) == len(m["nodes"])
    assert t["validation"][1][0] == "y" and "PASS" in page


def test_page_is_self_contained_and_escaped(built):
    _, _, m = built
    page = render(m, bench_doc(m), VALIDATION)
    tags = set(tables(page).tags)
    assert not tags & {"script", "link", "img", "iframe", "object"}
    assert not re.search(r'(src|href)\s*=\s*"(?!#)', page) and "url(http" not in page
    assert NASTY not in page and "conv&lt;b&gt;&amp;&quot;2" in page


def cli(capsys, *args: str) -> tuple[int, str, str]:
    """`ember ARGS` in-process (the subprocess form costs seconds of imports per call): exit code, stdout, stderr."""
    rc = main(list(args))
    out = capsys.readouterr()
    return rc, out.out, out.err


def error_line(capsys, *args: str) -> str:
    rc, _, err = cli(capsys, *args)
    lines = err.strip().splitlines()
    assert rc == 1 and len(lines) == 1 and lines[0].startswith("ember: error: "), err
    return lines[0]


def test_cli_report_and_compile_report(built, tmp_path, capsys):
    model, out, m = built
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps(bench_doc(m)))
    val = tmp_path / "val.json"
    val.write_text(json.dumps(VALIDATION))
    rc, _, err = cli(capsys, "report", str(out), "--bench", str(bench), "--validation", str(val),
                     "-o", str(tmp_path / "r.html"))
    assert rc == 0, err
    assert 'id="op-times"' in (tmp_path / "r.html").read_text()
    assert cli(capsys, "report", str(out / "res.json"))[0] == 0 and (out / "res.report.html").is_file()
    # The installed command, once, end to end.
    res = ember("compile", str(model), "-o", str(tmp_path / "b"), "--report", str(tmp_path / "c.html"))
    assert res.returncode == 0, res.stderr
    assert len(svg((tmp_path / "c.html").read_text(), "graph-svg").findall(f"{SVG}g[@class='node']")) == len(
        m["nodes"])


def test_cli_report_errors(built, tmp_path, capsys):
    model, out, m = built
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**bench_doc(m), "name": "lenet"}))
    assert "not 'res'" in error_line(capsys, "report", str(out), "--bench", str(other), "-o", str(tmp_path / "x"))
    assert "not JSON" in error_line(capsys, "report", str(out), "--validation", str(model))
    old = tmp_path / "old"
    old.mkdir()
    (old / "res.json").write_text(json.dumps({k: v for k, v in m.items() if k not in ("graph", "memory_plan")}))
    assert "recompile" in error_line(capsys, "report", str(old))
    # An unwritable --report is refused before the compile, leaving no bundle behind.
    err = error_line(capsys, "compile", str(model), "-o", str(tmp_path / "nb"), "--report", str(tmp_path))
    assert "--report" in err and not (tmp_path / "nb").exists()


def test_layout_puts_every_box_below_its_inputs_without_overlap():
    from ember.report.layout import layered

    # input 0; a branch (1, 2), a join (3), a skip from 0 to 4, then two independent tails.
    preds = [[], [0], [0], [1, 2], [3, 0], [4], [4]]
    places, width, height = layered(preds, 100, 40, 10, 20, first_layer=[0])
    for i, ps in enumerate(preds):
        assert all(places[i].y >= places[p].y + 40 + 20 for p in ps)
    for i, a in enumerate(places):
        assert 0 <= a.x - 50 and a.x + 50 <= width and a.y + 40 <= height
        for b in places[i + 1:]:
            assert a.y != b.y or abs(a.x - b.x) >= 100 + 10
