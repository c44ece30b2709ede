"""The one module anywidget sends: ``static/widget.js``, built by esbuild from the widget's
TypeScript and the views it shares with the panel, and read as it is."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from nbmemory.jupyter.widget import MemoryWidget, es_module
from support import ROOT

MAX_KB = 95.7
"""The built module's size. The hand-written modules inlined at import time weighed 95.15 KB
(95.3 KB allowed, issue 24); built from TypeScript, minified, with marked 18.2.1 inside, it is
79.85 KB (issue 38); 81.57 KB once its marks (the panel's: through inline elements, longest
term first), exact text, bidirectional controls, fold note, numbering, page buttons and gauge
maths come from views/; 92.73 KB once the views' context X-ray (each part's share, the
window's end), the compaction preview (an edit measured again and kept through Preview again),
the notes with their review (the approval setting, the headings, the restore's confirmation)
and the message card (tool calls read as a name, arguments and a result) are the panel's too;
94.43 KB once the compaction timeline and an opened compaction's head are the views' too;
94.82 KB once the page controls ("Page [n] of N" between the page buttons) and the list's
caption are; 95.54 KB once the search form (Enter searches, "archives too" searches again) is
the views' too, 0.4 KB above the hand-written module that had none of these. benchmarks/run.py
reports it."""

SRC = ROOT / "labextension" / "src"


def test_the_module_sent_is_the_built_one_small_and_whole():
    module = es_module.browser_module()
    assert module == MemoryWidget._esm
    assert module == (ROOT / "nbmemory" / "jupyter" / "static" / "widget.js").read_text()
    assert len(module) / 1000 <= MAX_KB, len(module)
    assert module.startswith("/*! nbmemory's widget") and "marked 18.2.1" in module
    # One module: it imports nothing (no relative file, no package), it has a default export.
    assert not re.search(r"""\bimport\s*(?:[\w{},*\s]+from\s*)?["']""", module)
    assert not re.search(r"""\bimport\(""", module)
    assert re.search(r"export\s*\{[^}]*\bas default\b", module)


def test_the_module_runs_its_markdown_renderer_in_node(tmp_path):
    node = shutil.which("node")
    if node is None:
        pytest.skip("no node to run the module")
    (tmp_path / "widget.mjs").write_text(MemoryWidget._esm)
    script = (
        "const m = await import(process.argv[1]);"
        "console.log(JSON.stringify([typeof m.default.render, m.markdownHtml(process.argv[2]),"
        " m.escapeHtml(process.argv[2])]));"
    )
    run = subprocess.run(
        [node, "--input-type=module", "-e", script, (tmp_path / "widget.mjs").as_uri(), "<b>x</b>"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(run.stdout) == [
        "function",
        "<p>&lt;b&gt;x&lt;/b&gt;</p>\n",
        "&lt;b&gt;x&lt;/b&gt;",
    ]


def test_a_checkout_never_built_says_how_to_build_the_module(tmp_path, monkeypatch):
    monkeypatch.setattr(es_module, "MODULE", tmp_path / "widget.js")
    with pytest.raises(RuntimeError, match=r"is not built: run `pip install -e \.`"):
        es_module.browser_module()


SHARED = {
    "el": r"(?:function\s+el\b|\bel\s*=\s*(?:\(|function))",
    "reveal": r"(?:function\s+reveal\b|\breveal\s*=)",
    "phrase": r"(?:function\s+phrase\b|\bphrase\s*=)",
    "counted": r"(?:function\s+(?:counted|plural)\b|\b(?:counted|plural)\s*=\s*\()",
    "number": r"(?:function\s+number\b|\bnumber\s*=\s*\()",
    "byte sizes": r"(?:function\s+(?:bytes|byteSize)\b|\b(?:bytes|byteSize)\s*=)",
    "page count": r"function\s+pageCount\b|/\s*size\)\)",
    "the sanitizer": r"\b(?:ALLOWED|MARKDOWN_TAGS|allowedTags)\b\s*[:=]",
    "the Markdown renderer": r"new\s+Marked\b|renderMarkdown\(\{",
    "term marking": r"function\s+(?:markText|markTerms|anyCase|wholeWord)\b",
    "exact text": r"function\s+shownText\b|\bel\(\s*[\"']pre[\"']",
    "bidirectional controls": r"function\s+(?:showBidi|unshowBidi)\b",
    "the fold note": r"function\s+foldNote\b|phrase\(\s*[\"']folded[\"']",
    "message numbering": r"function\s+messageNumber\b|\bindex\s*\+\s*1\b",
    "the page buttons' words": r"function\s+pageButtons\b|(?<!function )\bpagerLabels\(",
    "the numbers a page shows": r"function\s+shownNumbers\b|number\(offset \+ 1\)\}\u2013",
    "the gauges' scale": r"function\s+gaugeScale\b|Math\.max\(\s*win(?:dow)?\s*,",
    "the threshold's place": r"function\s+thresholdTokens\b|Math\.ceil\(\s*threshold\s*\*",
    "a part's colour": r"function\s+paint\b",
}
"""Definitions of a helper both views need (or its telltale line)."""


def test_the_widget_and_the_panel_define_no_shared_helper_of_their_own():
    # Each helper is written once, in views/; the widget's and the panel's own modules import it.
    sources = [p for p in SRC.rglob("*.ts") if not p.name.endswith(".d.ts")]
    sources += (ROOT / "nbmemory" / "jupyter" / "static").rglob("*.js")
    built = ROOT / "nbmemory" / "jupyter" / "static" / "widget.js"
    where = {
        helper: sorted(
            path.relative_to(SRC).as_posix()
            for path in sources
            if path != built and re.search(pattern, path.read_text())
        )
        for helper, pattern in SHARED.items()
    }
    assert all(len(paths) == 1 and paths[0].startswith("views/") for paths in where.values()), where
