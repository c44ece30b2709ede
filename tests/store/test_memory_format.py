"""The MEMORY.md format: what is written reloads exactly, damage is found and reported, and a
file found whole once is trusted again by its note."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nbmemory.store.memory_format import (
    block_bytes,
    format_block,
    format_header,
    parse,
    read_whole,
)
from support import FIXTURES

STRUCTURAL_LINES = [
    "---",
    "--- ",
    "\\---",
    "\\\\---",
    "### User — 2026-04-20T18:35:04",
    "\\### Agent — x",
    "### not a heading",
    "```json",
    "\\```json",
    "```",
    "{}",
    "## Interaction Log",
    "# Agent Memory",
    "    indented code",
    "",
    "\\",
]
lines = st.one_of(
    st.sampled_from(STRUCTURAL_LINES), st.text(max_size=30).filter(lambda s: "\n" not in s)
)
text_content = st.lists(lines, max_size=8).map("\n".join)
json_content = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=10,
)
roles = st.text(min_size=1, max_size=20).filter(
    lambda r: r.strip() and "\n" not in r and "\r" not in r
)


def blocks_file(*messages):
    return format_header("test") + "".join(
        format_block(r, c, "2026-04-20T18:35:04") for r, c in messages
    )


@settings(max_examples=300)
@given(st.lists(st.tuples(roles, text_content | json_content), min_size=1, max_size=5))
def test_any_content_reloads_exactly(messages):
    parsed = parse(blocks_file(*messages).encode())
    assert parsed.problems == []
    assert [(m["role"], m["content"]) for m in parsed.messages] == messages


@pytest.mark.parametrize(
    "content",
    [
        "a\n",
        "\n\nlead",
        "trail\n\n\n",
        "",
        "\n",
        "  indented\n\tand tabbed",
        "naïve ✓ 中文 🙂",
        '```json\n{"a": 1}\n```',
        "### Heading — like\n---\nbody",
        {"tool": "x", "args": [1, None]},
        [],
        None,
        "x" * 100_000,
    ],
)
def test_edge_content_round_trips(content):
    parsed = parse(blocks_file(("User", content)).encode())
    assert parsed.messages[0]["content"] == content
    assert parsed.problems == []


def test_blocks_have_the_spec_shape():
    block = format_block("ResearchAgent", "I recommend BigQuery.", "2026-04-20T18:35:21")
    assert block == "### ResearchAgent — 2026-04-20T18:35:21\n\nI recommend BigQuery.\n\n---\n\n"
    header = format_header("ResearchAgent_id_1_conversation", "2026-04-20T18:33:12")
    assert header == (
        "# Agent Memory\n\n**Conversation:** ResearchAgent_id_1_conversation\n"
        "**Created:** 2026-04-20T18:33:12\n\n---\n\n## Interaction Log\n\n"
    )


def test_lines_that_look_like_structure_are_escaped_readably():
    block = format_block("User", "before\n---\n### A — B\nafter", "t")
    assert "\n\\---\n\\### A — B\n" in block


@pytest.mark.parametrize("line", [*STRUCTURAL_LINES, "plain", "naïve ✓", "-", "#"])
def test_a_block_as_bytes_is_the_block_encoded(line):
    for content in (line, f"{line}\n{line}", {"line": line}):
        assert block_bytes("User", content, "t") == format_block("User", content, "t").encode()


def test_one_line_that_looks_like_structure_is_escaped_too():
    assert "\n\n\\### A — B\n\n" in format_block("User", "### A — B", "t")
    assert "\n\n\\---\n\n" in format_block("User", "---", "t")


def test_structured_content_is_written_as_a_json_block():
    block = format_block("Tool", {"city": "Paris", "temp": 21}, "t")
    assert '```json\n{\n  "city": "Paris",\n  "temp": 21\n}\n```' in block


def test_the_spec_example_loads():
    parsed = parse((FIXTURES / "spec_memory.md").read_bytes())
    assert parsed.problems == []
    assert parsed.conversation == "ResearchAgent_id_5f0c_conversation"
    assert parsed.created == "2026-04-20T18:33:12"
    assert parsed.messages == [
        {
            "role": "User",
            "timestamp": "2026-04-20T18:35:04",
            "content": "Research cloud database options for low-latency analytics.",
        },
        {
            "role": "ResearchAgent",
            "timestamp": "2026-04-20T18:35:21",
            "content": "I recommend evaluating BigQuery, ClickHouse Cloud, and AlloyDB...",
        },
    ]


def test_a_file_written_by_swarms_loads():
    parsed = parse((FIXTURES / "swarms_16_memory.md").read_bytes())
    assert parsed.problems == []
    assert [m["role"] for m in parsed.messages] == [
        "User",
        "ResearchAgent",
        "Tool Executor",
        "User",
    ]
    assert parsed.messages[1]["content"].endswith("## Shortlist\n- BigQuery\n- ClickHouse Cloud")
    assert parsed.messages[2]["content"] == "{'tool': 'search', 'result': ['a', 'b']}"
    assert re.fullmatch(r"2026-12-02T14:12:19\.\d{6}", parsed.messages[0]["timestamp"])


GOOD = blocks_file(("User", "first"), ("Agent", "second"))


TORN = "### User — 2026-04-20T18:36:00\n\n"


@pytest.mark.parametrize(
    ("damaged", "problem", "contents"),
    [
        (
            GOOD + TORN + "half a mess",
            "last message at line",
            ["first", "second", TORN + "half a mess"],
        ),
        (GOOD + TORN + "whole\n\n--", "cut short", ["first", "second", TORN + "whole"]),
        (GOOD + "### Us", "outside any message", ["first", "second", "### Us"]),
        (GOOD.split("## Interaction Log\n\n")[1], "header is missing", ["first", "second"]),
        (
            GOOD.replace("\n\n---\n\n### Agent", "\n\n### Agent"),
            "no closing",
            ["### User — 2026-04-20T18:35:04\n\nfirst", "second"],
        ),
        (
            GOOD + "a note added by hand\n",
            "outside any message",
            ["first", "second", "a note added by hand"],
        ),
    ],
)
def test_damaged_files_keep_what_is_readable(damaged, problem, contents):
    parsed = parse(damaged.encode())
    assert [m["content"] for m in parsed.messages] == contents
    assert any(problem in p for p in parsed.problems), parsed.problems
    damaged_roles = [m["role"] for m in parsed.messages if m["content"] not in ("first", "second")]
    assert set(damaged_roles) <= {"unparsed"}


def test_invalid_utf8_is_reported_and_the_rest_is_kept():
    data = GOOD.replace("second", "sec\udcffond").encode("utf-8", "surrogateescape")
    parsed = parse(data)
    assert [m["content"] for m in parsed.messages] == ["first", "sec\ufffdond"]
    assert any("invalid UTF-8" in p for p in parsed.problems)


def test_a_file_whose_line_ends_became_crlf_loads_as_its_messages():
    data = GOOD.replace("\n", "\r\n").encode()
    parsed = parse(data)
    assert [m["content"] for m in parsed.messages] == ["first", "second"]
    assert parsed.problems == []


DAMAGE = [
    b"\n---\n",
    b"\n### User \xe2\x80\x94 2026-04-20T18:35:04\n",
    b"\n\n---\n\n### Tool \xe2\x80\x94 t\n\n```json\n{bad\n```\n\n---\n\n",
    b"\n### not a heading\n",
    b"### X \xe2\x80\x94 a\xc2\xa0b\n\n",
    b"stray",
    b"\xff",
    b"\r\n",
    b"\n",
]


def damaged(data, damage):
    for at, piece in damage:
        at %= len(data) + 1
        data = data[:at] + piece + data[at:]
    return data


def assert_read_whole_as_parsed(data, whole):
    if whole is not None:
        parsed = parse(data)
        assert parsed.problems == []
        assert (whole.header, whole.messages) == (parsed.header, len(parsed.messages))
        assert parsed.header + parsed.log == data.decode()


@settings(max_examples=300)
@given(
    st.lists(st.tuples(roles, text_content | json_content), min_size=1, max_size=4),
    st.lists(st.tuples(st.integers(min_value=0), st.sampled_from(DAMAGE)), max_size=3),
)
def test_a_file_read_whole_is_one_that_parses_without_a_problem(messages, damage):
    data = damaged(blocks_file(*messages).encode(), damage)
    assert_read_whole_as_parsed(data, read_whole(data))


@settings(max_examples=300)
@given(
    st.lists(st.tuples(roles, text_content | json_content), min_size=1, max_size=3),
    st.lists(st.tuples(roles, text_content | json_content), max_size=3),
    st.lists(st.tuples(st.integers(min_value=0), st.sampled_from(DAMAGE)), max_size=2),
)
def test_a_note_spares_checking_again_what_it_names_and_nothing_else(first, later, damage):
    data = blocks_file(*first).encode()
    note = read_whole(data).note
    appended = "".join(format_block(r, c, "2026-04-20T18:35:04") for r, c in later).encode()
    grown = damaged(data + appended, damage)  # damage anywhere, in what was noted too
    whole = read_whole(grown, note)
    assert_read_whole_as_parsed(grown, whole)
    assert whole == read_whole(grown)  # what a check of the whole file finds


def test_common_memories_are_read_whole():
    data = blocks_file(
        ("User", "### Step 1\nplain text — with a dash"),
        ("Agent", {"tool_calls": [{"id": "c1"}]}),
        ("Tool", "naïve ✓ 中文 🙂\n\n- a list\n--- not a separator"),
    ).encode()
    whole = read_whole(data)
    assert (whole.header, whole.messages) == (parse(data).header, 3)
    assert read_whole(data.replace(b"\n--- not", b"\n---\nnot")) is None  # a separator
    assert read_whole(data + b"### User \xe2\x80\x94 t\n\ntorn") is None
    assert read_whole(format_header("t").encode()) is None  # no message: parsed at once


def test_a_note_names_the_bytes_it_was_made_of():
    data = blocks_file(("User", "one"), ("Agent", "two")).encode()
    note = read_whole(data).note
    same_size = data.replace(b"one", b"0ne")
    assert read_whole(same_size, note).note == read_whole(same_size).note != note
    torn = data.replace(b"two\n\n---", b"two\n\n-+-")
    assert read_whole(torn, note) is None
    others = [b"", b"whole-1", b"whole-1 x y z", b"\xff", b"whole-1 999 0 2", b"whole-2" + note[7:]]
    for other in others:  # not notes of this file: it is checked whole
        assert read_whole(data, other) == read_whole(data)
