"""One vocabulary for every view: the read model's JSON is the panel's types, the widget's
traits carry the same words, and the front ends word nothing of their own."""

from __future__ import annotations

import re

from nbmemory import Conversation
from nbmemory.memory.provenance import Cell, Provenance
from nbmemory.store import memory_path
from nbmemory.views.answers import (
    ArchiveInfo,
    CompactionInfo,
    Item,
    MessageTokens,
    TermPage,
    Usage,
    provenance_json,
)
from nbmemory.views.read_model import ReadModel
from nbmemory.wording import (
    BIDI,
    PAGERS,
    PARTS,
    WIDGET_WORDS,
    reveal,
    search_words,
    usage_words,
    vocabulary,
    widget_vocabulary,
)
from support import ROOT

SRC = ROOT / "labextension" / "src"
TYPES = [SRC / "api.ts", SRC / "views" / "vocabulary.ts", SRC / "views" / "xray.ts"]
"""Where the views' types of the read model's JSON are declared."""
FRONT_ENDS = sorted(SRC.rglob("*.ts"))
"""The panel's and the widget's sources, and the views they share."""
WIDGET = sorted([*(SRC / "widget").glob("*.ts"), *(SRC / "views").glob("*.ts")])
"""What the widget's module is built from."""


def interfaces() -> dict[str, set[str]]:
    """The field names of each interface of the panel's types, with those of the interface it
    extends."""
    text = "\n".join(path.read_text() for path in TYPES)
    pattern = r"export interface (\w+)(?: extends (\w+))? \{(.*?)\n\}"
    declared = {
        name: (base, set(re.findall(r"^  (\w+)\??:", body, re.M)))
        for name, base, body in re.findall(pattern, text, re.S)
    }

    def fields(name: str) -> set[str]:
        base, own = declared[name]
        return own | (fields(base) if base else set())

    return {name: fields(name) for name in declared}


USAGE = Usage(100, 1000, 0.9, "m", "cl100k_base", False, (("system prompt", 100),))
COMPACTION = CompactionInfo("history_x.md", "2026-01-01T00:00:00", 3, 60, 20, 0, "s", [], True)


def test_the_panels_types_name_exactly_what_the_read_model_serializes(workspace):
    Conversation(name="Typed", memory_md_path=memory_path("Typed")).add("User", "hello")
    agent = ReadModel().agent("Typed")
    types = interfaces()
    assert types["IAgent"] == set(agent.to_json())
    assert types["IUsage"] == set(USAGE.to_json())
    assert types["IUsageWords"] == set(USAGE.to_json()["words"])
    assert types["IPart"] == set(USAGE.to_json()["parts"][0])
    assert types["ICompaction"] == set(COMPACTION.to_json())
    assert types["IItem"] == set(Item(0, "User", "", "t", 1, "MEMORY.md").to_json())
    assert types["IProvenance"] == set(provenance_json(Cell(Provenance("a.ipynb"))))
    assert types["IArchive"] == set(ArchiveInfo("a.md", 1, 2, "t").to_json())
    assert types["IMessageTokens"] == set(MessageTokens("e", 1, 2, {}).to_json())
    assert types["IFound"] == set(TermPage("t", "a.md", 3, 0, 20).to_json())
    assert types["IVocabulary"] == set(vocabulary())
    assert types["IPartStyle"] == set(vocabulary()["parts"][0])


WIDGET_JS = SRC / "widget" / "index.ts"


def widget_fields() -> set[str]:
    """The fields the widget's modules read of the ``info`` trait: ``model.get("info").parts``,
    or ``x.tokens`` where ``const x = model.get("info")``."""
    fields: set[str] = set()
    for path in WIDGET:
        text = path.read_text()
        fields |= set(re.findall(r'model\.get\("info"\)\.(\w+)', text))
        for name in re.findall(r'const (\w+) = model\.get\("info"\);', text):
            fields |= set(re.findall(rf"\b{name}\.(\w+)", text))
    return fields


def test_the_widget_s_traits_are_the_read_models_serialization(workspace):
    from nbmemory.jupyter.widget import MemoryWidget

    convo = Conversation(name="Worded", memory_md_path=memory_path("Worded"))
    convo.add("User", "hello")
    convo.compact("Said hello.")
    widget = MemoryWidget("Worded")
    try:
        widget.refresh()
        reader = ReadModel()
        info = reader.agent("Worded")
        assert widget.info == info.to_json()
        assert widget.info["counts"] == "1 message · 1 archive"
        # The words are the kernel's one Vocabulary model, which every widget refers to.
        assert widget.vocabulary.words == widget_vocabulary()
        other = MemoryWidget("Other", poll_seconds=60)
        other.close()
        assert other.vocabulary is widget.vocabulary
        assert widget.get_state(["vocabulary"]) == {
            "vocabulary": f"IPY_MODEL_{widget.vocabulary.model_id}"
        }
        assert widget.archives == [a.to_json() for a in reader.archives("Worded")]
        # One name per figure: no trait repeats a key of the serialization under another name.
        traits = set(widget.traits(sync=True))
        retired = {"tokens_used", "usage_parts", "message_count", "memory_bytes", "archive_count"}
        assert not traits & retired
        # (`messages` is the page shown and `archives` the list, as GET .../archives names it.)
        assert traits & set(info.to_json()) == {"name", "messages", "archives"}
        # What the browser reads of `info` is what the server sends (the panel's IAgent).
        read = widget_fields()
        assert {"tokens", "context_length", "threshold", "parts", "words", "counts"} <= read
        assert read <= set(info.to_json()) == interfaces()["IAgent"]
        # The traits the browser redraws on are traits of the widget.
        listed = re.findall(r'"(\w+)"', WIDGET_JS.read_text().split("function render")[0])
        assert set(listed) <= traits, set(listed) - traits
        # The search's caption is the panel's sentence.
        widget.query = "HELLO"
        assert widget.search_caption == search_words("HELLO", 1, 0, 1, False, None)
        widget.search_archives = True
        assert widget.search_caption == search_words("HELLO", 2, 0, 2, True, None)
        assert widget.search_caption.startswith("2 messages with “HELLO” in MEMORY.md and the")
    finally:
        widget.close()


def test_the_widget_s_first_figures_are_keys_of_the_serialization(workspace):
    # Before the tokens are counted, the widget shows what the settings tell, under the same names.
    from nbmemory.jupyter.widget import MemoryWidget

    Conversation(name="Early", memory_md_path=memory_path("Early")).add("User", "hello")
    widget = MemoryWidget("Early", poll_seconds=60)
    try:
        keys = set(ReadModel().agent("Early").to_json())
        assert widget.info and set(widget.info) <= keys
        assert widget.info["messages"] == 1
    finally:
        widget.close()


READS = {
    "label": {"labels"},
    "phrase": {"phrases"},
    "pagerLabels": {"pagers", "labels"},
    "partStyle": {"parts"},
    "reveal": {"invisible"},
    "showBidi": {"bidi"},
    "unshowBidi": {"bidi"},
    "messageNumber": {"first_number"},
}
"""What each function of views/vocabulary.ts reads of the vocabulary."""


def widget_words() -> dict[str, set[str]]:
    """The vocabulary's top-level keys, labels and phrases the widget's modules read: through
    views/vocabulary.ts's functions (``label("back")``, ``phrase("dropped", ...)``,
    ``phraseAround("page", ...)``,
    ``pagerLabels(...)``, ``partStyle(...)``, ``reveal(...)``)."""
    text = "\n".join(path.read_text() for path in WIDGET if path.name != "vocabulary.ts")
    called = re.findall(rf"\b({'|'.join(READS)})\(", text)
    return {
        "keys": set().union(*(READS[name] for name in called)),
        "labels": set(re.findall(r"""\blabel\(\s*["']([^"']+)["']""", text)),
        "phrases": set(re.findall(r"""\bphrase(?:Around)?\(\s*["']([^"']+)["']""", text)),
    }


def test_the_widget_is_sent_the_words_its_modules_read_and_no_others():
    read = widget_words()
    sent = widget_vocabulary()
    assert read["keys"] == set(sent) < set(vocabulary())
    pager_labels = {key for keys in PAGERS.values() for key in keys}
    assert read["labels"] == set(WIDGET_WORDS["labels"])
    assert set(sent["labels"]) == read["labels"] | pager_labels
    assert read["phrases"] == set(WIDGET_WORDS["phrases"]) == set(sent["phrases"])
    # The same words under the same keys as every other view gets them.
    for key, words in sent.items():
        whole = vocabulary()[key]
        assert words == ({k: whole[k] for k in words} if isinstance(words, dict) else whole)


def test_the_words_of_a_full_request():
    words = usage_words(15_000, 16_000, 0.9, True)
    assert words["usage"] == "15,000 of 16,000 tokens (94%)"
    assert words["threshold"] == "compacts at 90% (14,400 tokens)"
    assert words["compacts_next"] == (
        "The next call compacts first: 15,000 tokens reach the threshold of 14,400 (90% of 16,000)."
    )
    assert usage_words(20_000, 16_000, None, False)["over_window"].startswith(
        "Over the window by 4,000 tokens"
    )
    assert usage_words(20_000, 16_000, None, False)["threshold"] == "compression off"


def test_exact_text_reveals_what_would_hide_or_reorder_text():
    assert reveal("a\u202eb\u200bc\u2066d\x1be\tf\ng") == (
        "a⟨U+202E⟩b⟨U+200B⟩c⟨U+2066⟩d⟨U+001B⟩e\tf\ng"
    )
    assert reveal("é 中文 🙂") == "é 中文 🙂"  # visible text stays as it is


def test_the_views_show_the_bidirectional_controls_exact_text_reveals():
    controls = [0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
    bidi = re.compile(BIDI)
    assert [c for c in range(0x3000) if bidi.fullmatch(chr(c))] == controls
    assert all(reveal(chr(c)) == f"⟨U+{c:04X}⟩" for c in controls)  # a part of INVISIBLE


def test_one_palette_and_one_description_per_part():
    parts = vocabulary()["parts"]
    assert [p["name"] for p in parts] == list(PARTS)
    assert len({p["color"] for p in parts}) == len(PARTS)
    # Neither stylesheet colours the parts on its own: both paint from the vocabulary.
    for css in (
        ROOT / "nbmemory" / "jupyter" / "static" / "widget.css",
        ROOT / "labextension" / "style" / "index.css",
    ):
        assert not re.search(r"part-\d\s*\{", css.read_text()), css


def test_the_front_ends_word_no_figure_of_their_own():
    # The wordings of "compacts next" and of the threshold the views had before; the words now
    # come from nbmemory.wording (as JSON), and parts are described there only.
    retired = [
        "compresses at",
        "compression at",
        "no compression",
        "will compact this memory first",
        "The next call will compact",
        "compacts on next run",
        "Compaction threshold:",
        "tokens_before)} →",
        "the tools it may call",
        "what the memory holds now",
        "messages match",
        "no message contains",
        "hits in",
        "Showing ${",
        "Show full text (",
        "still in the archive (",
        "keeps every name, number and date",
        "« Newest",
        "'Newer', 'Older'",
    ]
    for path in FRONT_ENDS:
        text = path.read_text()
        for phrase in retired:
            assert phrase not in text, (path.name, phrase)


def test_the_panels_fallback_labels_are_the_vocabularys():
    # The panel builds some elements before the server's vocabulary arrives; their fallbacks
    # are the vocabulary's words, so they read the same before and after.
    from nbmemory.wording import LABELS

    calls = [
        (key, fallback)
        for path in FRONT_ENDS
        for key, fallback in re.findall(r"label\(\s*'([^']+)',\s*'([^']+)'\s*\)", path.read_text())
    ]
    assert len(calls) >= 8
    assert [(key, LABELS.get(key)) for key, _ in calls] == calls


def test_the_widgets_markdown_words_before_its_vocabulary_are_the_vocabularys():
    # marked is set up before a widget's vocabulary arrives: its image words are the same.
    from nbmemory.wording import LABELS, PHRASES

    text = (SRC / "views" / "vocabulary.ts").read_text()
    labels = re.search(r"labels: \{ image: '([^']+)' \}", text)
    phrases = re.search(r"phrases: \{ image: '([^']+)' \}", text)
    assert labels and phrases and (phrases[1], labels[1]) == (PHRASES["image"], LABELS["image"])


def test_a_search_is_worded_once():
    assert search_words("Lyon", 250, 20, 20, False, None) == (
        "250 messages with “Lyon” in MEMORY.md; 21\u201340 shown"
    )
    assert search_words("Lyon", 1, 0, 1, True, "User") == (
        "1 message with “Lyon” in MEMORY.md and the archives among User's messages; 1\u20131 shown"
    )
    assert search_words("x", 0, 0, 0, False, None) == (
        "No results for “x” in MEMORY.md. Tick “archives too” to look in the archives."
    )


def test_the_panels_sentences_are_the_vocabularys():
    # The panel fills sentences of the vocabulary by key: each key it names is one the server
    # sends (a missing one would show as an empty line), the cell's among them.
    from nbmemory.wording import PHRASES

    named = {
        key
        for path in FRONT_ENDS
        for key in re.findall(r"\bphrase(?:Around)?\(\s*'([^']+)'", path.read_text())
    }
    assert {"cell gone", "notebook missing", "cell unknown", "folded", "page"} <= named
    assert named <= set(PHRASES), named - set(PHRASES)
    assert PHRASES["cell gone"].format(count=12, notebook="analysis.ipynb") == (
        "cell [12] is gone from analysis.ipynb"
    )
