"""Model text rendered for a notebook: Markdown that looks right and cannot run or fetch."""

from html.parser import HTMLParser

import mistune
from hypothesis import given
from hypothesis import strategies as st

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
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, dict(attrs)))


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
