"""The HTML report as a user sees it: loaded in headless Chromium (playwright), the graph, the memory picture
and the tables render, nothing is fetched from anywhere, no script error; a screenshot is kept in
tests/artifacts/ (ignored by git; CI can upload it)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ember.report.html import render
from tests.report.models import VALIDATION, bench_doc, compiled

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
        "--disable-component-update", "--disable-sync"]


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary (apt-get install chromium; scripts/test.sh does)")
def test_report_renders_in_chromium(tmp_path):
    from playwright.sync_api import sync_playwright

    _, _, m = compiled(tmp_path)
    page_file = tmp_path / "report.html"
    page_file.write_text(render(m, bench_doc(m), VALIDATION), encoding="utf-8")
    errors: list[str] = []
    requests: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda msg: errors.append(msg.text) if msg.type in ("error", "warning") else None)
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.on("request", lambda req: requests.append(req.url))
            page.goto(page_file.as_uri())
            page.wait_for_load_state("load")
            graph = page.locator("#graph-svg")
            assert graph.locator("g.node").count() == len(m["nodes"])
            box = graph.bounding_box()
            assert box is not None and box["width"] > 200 and box["height"] > 300
            # Each node's box is laid out inside the drawing (not collapsed at the origin).
            tops = {round(page.locator(f"#graph-svg g.node[data-index='{i}'] rect").bounding_box()["y"])
                    for i in range(len(m["nodes"]))}
            assert len(tops) >= 4
            bufs = page.locator("#memory-svg rect.buf")
            assert bufs.count() == len(m["memory_plan"]["buffers"])
            assert all(bufs.nth(i).bounding_box()["height"] > 0 for i in range(bufs.count()))
            for table in ("regions", "nodes", "op-times", "validation", "passes"):
                assert page.locator(f"table#{table}").is_visible(), table
            assert page.locator("table#nodes tr").count() == 1 + len(m["nodes"])
            ARTIFACTS.mkdir(exist_ok=True)
            shot = ARTIFACTS / "report.png"
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    assert errors == []
    assert requests == [page_file.as_uri()]  # self-contained: the page itself and nothing else
    assert shot.stat().st_size > 10_000
