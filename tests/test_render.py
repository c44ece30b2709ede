"""Model text rendered for a notebook: Markdown that looks right and cannot run or fetch."""

import re
from html import escape
from html.parser import HTMLParser

import mistune
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from nbmemory.jupyter.render import Answer, chat_markdown, markdown_html, safe_bundle

HOSTILE = (
    '<img src=x onerror="window.__pwned=1"> <script>window.__pwned=2</script>\n'
    '<svg onload="window.__pwned=3"></svg>\n\n'
    "[click](javascript:window.__pwned=4) [also](JaVaScRiPt:alert(1)) "
    "[encoded](java&#x73;cript:alert(1)) [data](data:text/html,<b>x</b>)\n\n"
    "![tracker](http://127.0.0.1:9/tracker.png) [fine](https://example.com)"
)


class Tags(HTMLParser):
    """The tags and attributes of an HTML text."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str | None]]] = []
        self.shown: list[str] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.shown.append(data)


def test_raw_html_is_text_and_only_web_links_are_live():
    html = markdown_html(HOSTILE)
    tags = Tags(html).found
    assert {tag for tag, _ in tags} <= {"div", "p", "a"}
    assert [attrs["href"] for tag, attrs in tags if tag == "a"] == [
        "http://127.0.0.1:9/tracker.png",
        "https://example.com",
    ]
    assert all(not name.startswith("on") for _, attrs in tags for name in attrs)
    assert "&lt;img src=x onerror=" in html and "&lt;script&gt;" in html
    assert "image: tracker" in html  # an image is a link to follow, never a fetch


def test_markdown_renders_tables_lists_quotes_and_code():
    html = markdown_html(
        "| a | b |\n|---|---|\n| 1 | 2 |\n\n1. one\n2. two\n   - nested\n\n> quoted\n\n"
        "```python\nx = '<b>'\n```"
    )
    tags = [tag for tag, _ in Tags(html).found]
    for tag in ("table", "td", "ol", "ul", "blockquote", "pre", "code"):
        assert tag in tags
    assert "x = &#x27;&lt;b&gt;&#x27;" in html or "x = '&lt;b&gt;'" in html


def test_an_answer_displays_as_safe_html_and_its_own_text():
    bundle = safe_bundle("Hi <img src=x onerror=alert(1)>")
    assert set(bundle) == {"text/html", "text/plain"}
    assert bundle["text/plain"] == "Hi <img src=x onerror=alert(1)>"
    assert "<img" not in bundle["text/html"]
    assert Answer("**bold**")._repr_html_().count("<strong>bold</strong>") == 1


MIRRORED = "Pay invoice\u202efdp.exe today"


def test_a_bidirectional_control_shows_as_its_code_point_in_an_answer_and_in_the_chat():
    """U+202E applied would make "invoice‮fdp.exe" read "invoiceexe.pdf": rendered answers and
    chat replies show it as ⟨U+202E⟩, in text and in code alike; the plain text keeps it."""
    shown = "Pay invoice⟨U+202E⟩fdp.exe today"
    for rendered in (markdown_html(MIRRORED), raw_html_on(chat_markdown(MIRRORED))):
        assert shown in rendered and "\u202e" not in rendered
    fenced = f"```\n{MIRRORED}\n```"
    assert shown in markdown_html(fenced) and shown in chat_markdown(fenced)
    assert safe_bundle(MIRRORED)["text/plain"] == "Pay invoice⟨U+202E⟩fdp.exe today"


RAW_HTML_ON = mistune.create_markdown(escape=False, plugins=["table", "strikethrough", "url"])


def raw_html_on(markdown: str) -> str:
    """Markdown rendered as Jupyter AI's chat renders it: raw HTML passed through, tables on."""
    return RAW_HTML_ON(markdown)


def test_for_the_chat_raw_html_links_and_images_show_as_text():
    html = raw_html_on(chat_markdown(HOSTILE))
    tags = Tags(html).found
    assert {tag for tag, _ in tags} <= {"p", "a"}  # a bare web address is still a link
    assert all(attrs["href"].startswith("http") for tag, attrs in tags if tag == "a")
    assert "&lt;img src=x onerror=" in html and "&lt;script&gt;" in html
    assert "![tracker](" in html  # shown, never fetched
    assert "[click](javascript:window.__pwned=4)" in html


def test_for_the_chat_code_stays_code_and_text_stays_itself():
    text = (
        "Use `a < b && c` here, not \\`this\\`.\n\n"
        "```python\nx = '<b>' & 1\n```\n\n"
        "AT&T's &amp; <br> stays as written; a \\<tag> too."
    )
    html = raw_html_on(chat_markdown(text))
    assert "<code>a &lt; b &amp;&amp; c</code>" in html
    assert "x = &#x27;&lt;b&gt;&#x27; &amp; 1" in html or "x = '&lt;b&gt;' &amp; 1" in html
    assert "not `this`." in html
    assert "AT&amp;T's &amp;amp; &lt;br&gt; stays as written; a &lt;tag&gt; too." in html


def test_for_the_chat_a_code_span_is_never_paired_across_lines_or_table_cells():
    text = "a `b\nc` <img src=x onerror=1> `d`\n\n| x | y |\n|---|---|\n| `<img src=y>| z` |"
    html = raw_html_on(chat_markdown(text))
    assert "<img" not in html


MARKDOWN = st.lists(
    st.sampled_from(
        [
            "<",
            ">",
            "`",
            "``",
            "```",
            "~~~",
            "|",
            "\\",
            "[",
            "]",
            "(",
            ")",
            "!",
            "&",
            "\n",
            "\r",
            " ",
            "    ",
            "> ",
            "- ",
            "img",
            "a",
            "=",
        ]
    ),
    max_size=60,
).map("".join)


@given(MARKDOWN)
def test_for_the_chat_no_markdown_makes_a_tag(text):
    tags = {tag for tag, _ in Tags(raw_html_on(chat_markdown(text))).found}
    assert tags <= {
        "p",
        "code",
        "pre",
        "blockquote",
        "ul",
        "ol",
        "li",
        "em",
        "strong",
        "hr",
        "br",
        "h1",
        "h2",
        "del",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
    }


COMMONMARK = MarkdownIt("commonmark", {"html": True})
"""The CommonMark reference renderer with raw HTML passed through, as Jupyter AI's chat does."""
WITH_TABLES = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
"""The same with GitHub's tables and strikethrough, which the chat's renderer has too."""
STRUCTURAL = {
    *("p", "ul", "ol", "li", "blockquote", "pre", "code", "em", "strong", "hr", "br", "s"),
    *("h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td"),
}
"""Tags that only arrange text: no fetch, no link, no script, nothing to click."""
HARMLESS_ATTRIBUTES = {("ol", "start"), ("code", "class"), ("th", "style"), ("td", "style")}


def assert_only_structure(html: str) -> None:
    for tag, attrs in Tags(html).found:
        assert tag in STRUCTURAL, f"<{tag}> in {html!r}"
        for name in attrs:
            assert (tag, name) in HARMLESS_ATTRIBUTES, f"<{tag} {name}=...> in {html!r}"


def words(markdown: str, html: bool) -> list[str]:
    """The words a CommonMark renderer shows for ``markdown`` (with raw HTML on or off), with
    the whole info string of each fence (a renderer shows its first word at most, as a class)."""
    renderer = MarkdownIt("commonmark", {"html": html, "highlight": info_and_code})
    return re.findall(r"[A-Za-z]+", " ".join(Tags(renderer.render(markdown)).shown))


def info_and_code(code: str, name: str, attrs: str) -> str:
    return escape(f"{name} {attrs}\n{code}")


def appear_in_order(wanted: list[str], shown: list[str]) -> bool:
    rest = iter(shown)
    return all(word in rest for word in wanted)


LIST_FENCES = {
    "a list item": "- item\n  ```\n{payload}\n",
    "an ordered list item": "1. step\n\n   ~~~\n{payload}\n",
    "an indented fence": "- a\n   ```\n{payload}\n",
    "a block quote in a list": "- > quoted\n  ```\n{payload}\n",
    "a block quote": "> ```\n{payload}\n",
    "a list in a block quote": "> * a\n>   ````\n> {payload}\n",
}
"""A fence that CommonMark closes where its list item or block quote ends: the next line is
outside it."""


@pytest.mark.parametrize("where", LIST_FENCES)
def test_for_the_chat_a_fence_ends_where_its_list_or_quote_ends(where):
    payload = '<img src="http://127.0.0.1:9/b"> <a href="http://127.0.0.1:9/a">go</a>'
    text = LIST_FENCES[where].format(payload=payload) + "```\n<b>code</b>\n```\n"
    for renderer in (COMMONMARK, WITH_TABLES):
        html = renderer.render(chat_markdown(text))
        assert_only_structure(html)
        assert "&lt;img src=" in html and "&lt;a href=" in html
        assert "&lt;b&gt;code&lt;/b&gt;" in html  # code after it is still code


MARKED_READS_OTHERWISE = {
    "a web address before a code span": "Visit http://example.com`{payload}` now\n",
    "a tilde before a code span": "about ~`{payload}`\n",
    "a web address before an escape": "See http://example.com/\\{payload}\n",
    "a line that marked takes for a closing fence": "```\n```~~~\n{payload}\n```\n",
    "indented code after a list in a quote": "> > - a\n    1. b\n    {payload}\n",
    "a tab before a fence": "\t- a\n```\n{payload}\n```\n",
    "a tab in a fence in a list item": "- a\n  ```\n  \t{payload}\n  ```\n",
}
"""Code that CommonMark sees and marked (the chat's renderer, with GitHub's extensions) does
not: a code span a bare web address or a tilde runs into, a backslash taken into a web address,
a fence closed by a line with more after its run, tabs and indented blocks nested otherwise."""


@pytest.mark.parametrize("where", MARKED_READS_OTHERWISE)
def test_for_the_chat_code_that_marked_reads_otherwise_is_escaped(where):
    payload = '<img src="http://127.0.0.1:9/b"> [go](javascript:alert(1))'
    written = chat_markdown(MARKED_READS_OTHERWISE[where].format(payload=payload))
    assert "<" not in written and "](javascript" not in written.replace("\\[go]", "")


PREFIXES = ["", " ", "  ", "   ", "    ", "\t", ">", "> ", "- ", "* ", "1. ", "2) ", "10. "]
"""Indentation and the openers of block quotes and list items, nested as a line chains them."""
PIECES = [
    *("```", "````", "~~~", "``` py", "~~~ <b>&amp;", "`", "``", "`x <b>`", " ", "   "),
    *('<img src=x onerror="alert(1)">', '<a href="http://beacon/a">a</a>', "</a>", "<b>"),
    *("![x](http://beacon/i)", "[y](javascript:alert(1))", "<http://beacon/l>", "<me@x.org>"),
    *("&lt;img src=x&gt;", "&#60;img", "&", "<", "\\", "[r]: http://beacon/r", "[r]", "|"),
    *("<div>", "</div>", "<!-- c", "-->", "<script>", "</script>", "<?", "<![CDATA[", "]]>"),
    *("***", "---", "===", "# ", "text", "|---|---|"),
]
"""What a line holds after its prefixes: fences, code spans, raw HTML, links, entities."""
FENCES = ["```", "~~~", "````", "``` py", "~~~ <b>&amp;"]
LINE = st.tuples(
    st.lists(st.sampled_from(PREFIXES), max_size=4).map("".join),
    st.one_of(  # every other line or so opens or closes a fence, if it is where one can
        st.sampled_from(FENCES),
        st.lists(st.sampled_from(PIECES), max_size=4).map("".join),
    ),
).map("".join)
DOCUMENT = st.tuples(st.lists(LINE, max_size=14), st.sampled_from(["\n", "\r\n"])).map(
    lambda parts: parts[1].join(parts[0])
)


@settings(max_examples=3000, deadline=None)
@given(DOCUMENT)
def test_for_the_chat_commonmark_finds_no_tag_and_every_word(text):
    safe = chat_markdown(text)
    for renderer in (COMMONMARK, WITH_TABLES):
        assert_only_structure(renderer.render(safe))
    assert appear_in_order(words(text, html=False), words(safe, html=True))


@settings(max_examples=500, deadline=None)
@given(MARKDOWN)
def test_for_the_chat_commonmark_finds_no_tag_in_any_characters(text):
    for renderer in (COMMONMARK, WITH_TABLES):
        assert_only_structure(renderer.render(chat_markdown(text)))
