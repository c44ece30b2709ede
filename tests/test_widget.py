"""The widget's traits follow the conversation, without a browser."""

import json

from nbmemory import Agent, Conversation
from nbmemory.jupyter.widget import PAGE_SIZE, PREVIEW_CHARS, MemoryWidget
from nbmemory.workspace import memory_path


def persistent(name="Viewer", **kwargs):
    return Conversation(name=name, memory_md_path=memory_path(name), **kwargs)


def test_it_shows_counts_tokens_and_the_newest_page():
    convo = persistent(context_length=2000)
    for i in range(45):
        convo.add("User", f"message {i}")
    widget = MemoryWidget(convo)
    assert (widget.name, widget.message_count, widget.context_length) == ("Viewer", 45, 2000)
    assert widget.tokens_used == convo.count_history_tokens() > 0
    assert widget.memory_bytes == memory_path("Viewer").stat().st_size
    assert [m["content"] for m in widget.messages] == [f"message {i}" for i in range(44, 24, -1)]
    assert widget.messages[0]["role"] == "User" and widget.messages[0]["time"]


def test_it_follows_adds_and_compactions_live():
    convo = persistent()
    widget = MemoryWidget(convo)
    convo.add("User", "first")
    assert widget.message_count == 1 and widget.messages[0]["content"] == "first"
    before = widget.tokens_used
    convo.add("User", "second")
    assert widget.messages[0]["content"] == "second" and widget.tokens_used > before
    convo.compact("Both said.")
    assert widget.message_count == 1 and widget.archive_count == 1
    assert widget.archives == [p.name for p in convo.archives()]
    assert widget.last_compaction
    assert widget.messages[0]["content"].endswith("Both said.")


def test_paging_and_order():
    convo = Conversation(name="Pager")
    for i in range(50):
        convo.add("User", f"m{i}")
    widget = MemoryWidget(convo)
    widget.page = 2
    assert [m["content"] for m in widget.messages] == [f"m{i}" for i in range(9, -1, -1)]
    widget.newest_first = False
    assert [m["content"] for m in widget.messages] == [f"m{i}" for i in range(40, 50)]
    widget.page = 99
    assert widget.page == 2


def test_a_long_history_sends_a_page_not_the_history():
    convo = Conversation(name="Big")
    for i in range(10_000):
        convo.add("User", f"message {i} " + "x" * 190)
    widget = MemoryWidget(convo)
    assert len(widget.messages) == PAGE_SIZE
    assert len(json.dumps(widget.get_state())) < 50_000


def test_long_messages_are_folded():
    convo = Conversation(name="Long")
    convo.add("Tool", "y" * (PREVIEW_CHARS * 3))
    item = MemoryWidget(convo).messages[0]
    assert item["folded"] and len(item["content"]) == PREVIEW_CHARS


def test_search_and_archives_on_the_python_side():
    convo = persistent()
    convo.add("User", "The budget is 40k EUR.")
    convo.compact("Budget agreed.")
    widget = MemoryWidget(convo)
    widget.query = "budget"
    assert [r["source"] for r in widget.search_results] == ["MEMORY.md"]
    widget.search_archives = True
    assert len(widget.search_results) == 2
    widget.query = ""
    assert widget.search_results == []
    widget.open_archive = widget.archives[0]
    assert [m["content"] for m in widget.archive_messages] == ["The budget is 40k EUR."]


def test_an_agents_stream_and_the_compact_button():
    agent = Agent(agent_name="Talker", persistent_memory=True)
    widget = MemoryWidget(agent)
    seen = []
    widget.observe(lambda change: seen.append(change["new"]), "streaming")
    agent.run("Our office is in Lyon.")
    assert any(text.startswith("I have nothing") for text in seen)
    assert widget.streaming == ""
    assert widget.message_count == 2 and widget.model_name == "nbmemory/offline"
    widget._command(widget, {"command": "compact"}, [])
    assert widget.status == "Compacted."
    assert widget.archive_count == 1 and widget.message_count == 1


def test_outside_a_widget_front_end_it_is_a_readable_summary():
    convo = Conversation(name="Quiet", context_length=1000)
    convo.add("User", "<img src=x onerror=alert(1)>")
    widget = MemoryWidget(convo)
    assert repr(widget) == f"MemoryWidget('Quiet': 1 messages, {widget.tokens_used}/1000 tokens)"
    data, _ = widget._repr_mimebundle_()
    assert data["text/markdown"].startswith("**Quiet** memory:")
    assert "application/vnd.jupyter.widget-view+json" in data
