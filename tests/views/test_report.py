"""Reports for a terminal and for Markdown: hostile names and text stay literal."""

from nbmemory import Conversation
from nbmemory.store import memory_path
from nbmemory.views.read_model import ReadModel
from nbmemory.views.report import AgentTable, MessageList, fenced, markdown_escape


def test_markdown_escape_leaves_nothing_to_interpret():
    escaped = markdown_escape("<img src=x> [a](javascript:x) *b* `c` | d http://t.co/x")
    assert "<" not in escaped.replace("\\<", "")
    assert escaped.startswith("\\<img") and "\\[a\\](javascript:x)" in escaped
    assert escaped.endswith("http\\://t.co/x")  # a bare URL is not made a link


def test_fences_outgrow_backticks_inside():
    assert fenced("a ```` b").startswith("`````\n")


def test_the_table_and_messages_keep_hostile_text_literal(workspace):
    name = "<b onclick=x>"
    convo = Conversation(name=name, memory_md_path=memory_path(name))
    convo.add("User", "<img src=x onerror=alert(1)>")
    reader = ReadModel()
    table = AgentTable(reader.agents())
    assert "\\<b onclick=x\\>" in table._repr_markdown_()
    assert repr(table).splitlines()[1].startswith("<b onclick=x>")
    shown = MessageList("memory", reader.messages(name).items)
    assert "```\n<img src=x onerror=alert(1)>\n```" in shown._repr_markdown_()
    assert "<img src=x onerror=alert(1)>" in repr(shown)


def test_invisible_and_bidirectional_characters_are_shown_never_applied(workspace):
    convo = Conversation(name="Payer", memory_md_path=memory_path("Payer"))
    convo.add("User", "Pay \u202eRUE 001\u202c to\u200bday")
    shown = MessageList("memory", ReadModel().messages("Payer").items)
    for out in (repr(shown), shown._repr_markdown_()):
        assert "Pay ⟨U+202E⟩RUE 001⟨U+202C⟩ to⟨U+200B⟩day" in out
        assert not any(ch in out for ch in "\u202e\u202c\u200b")


def test_messages_are_numbered_from_one_as_in_every_view(workspace):
    convo = Conversation(name="Counter", memory_md_path=memory_path("Counter"))
    convo.add("User", "first")
    convo.add("User", "second")
    shown = repr(MessageList("memory", ReadModel().messages("Counter", newest_first=False).items))
    assert "--- #1 · User" in shown and "--- #2 · User" in shown
