"""Following a memory file: only what was appended is read, anything else is read again."""

from __future__ import annotations

import os
import threading

import pytest

from nbmemory import Conversation
from nbmemory.store import Workspace, memory_path
from nbmemory.store.follow import follow
from nbmemory.store.memory_format import format_block
from support import run_python

APPEND = (
    "import sys\n"
    "from nbmemory import Conversation\n"
    "from nbmemory.store import memory_path\n"
    "Conversation(name='Shared', memory_md_path=memory_path('Shared')).add('User', sys.argv[1])\n"
)

FILE_READS = pytest.mark.files(
    "how a file is followed (stat, appended bytes, rewritten in place); the database's "
    "following is test_on_the_database_an_append_reads_only_the_new_blocks"
)


@FILE_READS
def test_unchanged_is_the_same_object_and_an_append_extends_it(workspace):
    Conversation(name="Shared", memory_md_path=memory_path("Shared")).add("User", "first")
    path = memory_path("Shared")
    first = follow(path)
    assert follow(path) is first
    first.per_message["lengths"] = [5]
    run_python(APPEND, "second")
    grown = follow(path)
    assert [m["content"] for m in grown.messages] == ["first", "second"]
    assert grown.end == grown.size == path.stat().st_size
    assert grown.per_message == {"lengths": [5]}  # computed for the first message, carried over
    assert grown.per_message["lengths"] is not first.per_message["lengths"]


@FILE_READS
def test_what_readers_grow_is_shared_while_the_file_only_grows(workspace):
    convo = Conversation(name="Grower", memory_md_path=memory_path("Grower"))
    convo.add("User", "first")
    path = memory_path("Grower")
    follow(path).grown["index"] = index = ["first"]
    run_python(APPEND, "second")
    assert follow(path).grown["index"] is index  # an append: the same, to be extended
    convo.compact("a summary")
    assert follow(path).grown == {}  # rewritten: built again


@FILE_READS
def test_a_file_rewritten_in_place_or_replaced_is_read_again(workspace):
    convo = Conversation(name="Edited", memory_md_path=memory_path("Edited"))
    convo.add("User", "alpha")
    path = memory_path("Edited")
    follow(path).cache["anything"] = 1
    text = path.read_text().replace("alpha", "gamma") + format_block("User", "delta", "t")
    with open(path, "r+", encoding="utf-8") as handle:  # same inode, changed and grown
        handle.write(text)
    again = follow(path)
    assert [m["content"] for m in again.messages] == ["gamma", "delta"]
    assert again.cache == {}
    convo.compact("epsilon")
    assert [m["content"] for m in follow(path).messages] == ["epsilon"]


@FILE_READS
def test_a_torn_block_is_shown_and_read_again_once_it_is_whole(workspace):
    path = memory_path("Torn")
    Conversation(name="Torn", memory_md_path=path).add("User", "whole")
    block = format_block("User", "second half", "t").encode()
    with open(path, "ab") as handle:
        handle.write(block[:12])
    torn = follow(path)
    assert torn.end is None and torn.problems
    with open(path, "ab") as handle:
        handle.write(block[12:])
    assert [m["content"] for m in follow(path).messages] == ["whole", "second half"]


def test_a_missing_file_is_none_and_a_fifo_is_refused_never_waited_on(workspace):
    path = memory_path("Pipe")
    assert follow(path) is None
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    result: list[object] = []
    reader = threading.Thread(target=lambda: result.append(follow(path)))
    reader.start()
    reader.join(timeout=30)
    assert len(result) == 1 and result[0].messages == []
    assert "not a regular file" in result[0].problems[0]


def test_on_the_database_an_append_reads_only_the_new_blocks(database):
    convo = Conversation(name="Shared", memory_md_path=memory_path("Shared"))
    convo.add("User", "first")
    path = memory_path("Shared")
    first = follow(path, convo.docs)
    assert follow(path, convo.docs) is first  # unchanged: one query, same object
    first.per_message["lengths"] = [5]
    first.grown["index"] = index = ["first"]
    run_python(APPEND, "second")
    grown = follow(path, convo.docs)
    assert [m["content"] for m in grown.messages] == ["first", "second"]
    assert grown.per_message == {"lengths": [5]}  # carried over: it was an append
    assert grown.grown["index"] is index
    convo.compact("a summary")
    again = follow(path, convo.docs)
    assert [m["content"] for m in again.messages] == ["a summary"]
    assert again.per_message == {} == again.grown and again.identity != grown.identity
    archive = follow(convo.archives()[0], convo.docs)
    assert [m["content"] for m in archive.messages] == ["first", "second"]
    assert follow(convo.archives()[0], convo.docs) is archive
    assert follow(memory_path("Nobody"), Workspace.from_env().agent("Nobody")) is None
