from nbmemory import Conversation
from nbmemory.memory.preload import PRELOAD_MARKER, preload_text, preloaded_messages
from nbmemory.store import memory_path
from nbmemory.store.memory_format import parse
from support import stored


def test_the_preload_reads_back_as_the_messages_of_the_file(workspace):
    convo = Conversation(name="Echo", memory_md_path=memory_path("Echo"))
    convo.add("User", "### User — not a heading\n---\nkept as written")
    convo.add("Echo", {"tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": "{}"}}]})
    parsed = parse(stored("Echo"))
    text = preload_text(parsed.header, parsed.log)
    assert text.startswith(PRELOAD_MARKER)
    assert preloaded_messages(text) == parsed.messages
    assert preloaded_messages("another system message") is None
