"""Model text rendered for a notebook: Markdown that looks right and cannot run or fetch."""

from html.parser import HTMLParser

from nbmemory.jupyter.render import Answer, markdown_html, safe_bundle

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
