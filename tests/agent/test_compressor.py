import itertools
import json
import warnings
from types import SimpleNamespace
from unittest.mock import patch

import pytest

import support
from nbmemory import Agent, ContextCompressor
from nbmemory.agent.agent import TOOL_ROLE
from nbmemory.agent.compressor import (
    COMPRESSION_SYSTEM_PROMPT,
    COMPRESSION_USER_TEMPLATE,
    REGROW_SHARE,
)
from nbmemory.errors import CompactionError, MemoryWarning, ModelError
from nbmemory.memory.compactions import read_record, record_path
from nbmemory.memory.notes import PROMPT_LINE as NOTES_LINE
from nbmemory.memory.preload import SUMMARY_MARKER
from nbmemory.models.llm import OFFLINE_MODEL
from nbmemory.recall import PROMPT_LINE as RECALL_LINE
from nbmemory.store import memory_path
from nbmemory.tokens import TokenCounter
from nbmemory.views.read_model import ReadModel
from nbmemory.views.report import AgentTable, usage_line
from support import stored, stored_messages


def http_agent(server, name="Worker", **options):
    options.setdefault("context_length", 3000)
    return support.http_agent(server, name, **options)


LONG_TASK = "Please check every budget line again, one by one, and report totals. " * 5


def summary_requests(server):
    return [r for r in server.requests if r["messages"][0]["content"] == COMPRESSION_SYSTEM_PROMPT]


def fill_to_just_below_threshold(agent, prefix="note"):
    """Add messages until a short task stays below the threshold and a long one crosses it."""
    compressor = agent._context_compressor
    limit = compressor.threshold * agent.context_length
    n = 0
    while compressor.tokens_used(agent) + 60 < limit:
        agent.short_memory.add("User", f"{prefix} {n}: the budget line {n} is {n * 7} EUR.")
        n += 1
    assert not compressor.should_compress(agent)
    return n


def test_the_threshold_and_its_limits_are_checked():
    assert ContextCompressor().threshold == 0.9
    for bad in (0, 1.5, -0.1):
        with pytest.raises(ValueError, match="threshold"):
            ContextCompressor(threshold=bad)


@pytest.mark.parametrize("max_loops", [1, "auto"])
def test_compression_fires_at_the_threshold_and_keeps_the_task(openai_server, max_loops):
    agent = http_agent(openai_server, system_prompt="Be exact.", max_loops=max_loops)
    agent._context_compressor = ContextCompressor(keep_exchanges=0, keep_dropped=False)
    count = fill_to_just_below_threshold(agent)
    agent.run("short task")
    assert summary_requests(openai_server) == []

    openai_server.reply("Budget lines 0 to N are recorded.")  # the summary
    openai_server.reply("Done.")  # the answer
    long_task = LONG_TASK
    assert agent.run(long_task) == "Done."

    [summarized] = summary_requests(openai_server)
    transcript = summarized["messages"][1]["content"]
    assert all(f"note {i}:" in transcript for i in range(count))
    assert long_task not in transcript
    summary = f"{SUMMARY_MARKER}\nBudget lines 0 to N are recorded."
    last_request = openai_server.requests[-1]["messages"]
    prompt = "\n\n".join(["Be exact.", RECALL_LINE, NOTES_LINE])
    assert [m["content"] for m in last_request] == [prompt, summary, long_task]
    assert [m["content"] for m in agent.short_memory.to_dict()] == [
        prompt,
        summary,
        long_task,
        "Done.",
    ]
    on_disk = stored_messages("Worker")
    assert [m["content"] for m in on_disk] == [summary, long_task, "Done."]
    [archive] = agent.short_memory.archives()
    archived = [m["content"] for m in stored_messages("Worker", archive)]
    assert archived[:count] == [
        f"note {i}: the budget line {i} is {i * 7} EUR." for i in range(count)
    ]

    restarted = http_agent(openai_server, system_prompt="Be exact.")
    assert [m["content"] for m in restarted.short_memory.preloaded_messages] == [
        summary,
        long_task,
        "Done.",
    ]


def test_the_last_exchange_is_kept_word_for_word_and_the_loss_is_recorded(openai_server):
    agent = http_agent(openai_server)
    agent._context_compressor = ContextCompressor(keep_dropped=False)  # the model's summary alone
    count = fill_to_just_below_threshold(agent)
    agent.run("short task about the Zephyr account")  # its answer is "ok"
    openai_server.reply("Budget lines were recorded.")
    openai_server.reply("Done.")
    agent.run(LONG_TASK)
    [summarized] = summary_requests(openai_server)
    assert "Zephyr" not in summarized["messages"][1]["content"]
    on_disk = [m["content"] for m in stored_messages("Worker")]
    assert on_disk[1:] == ["short task about the Zephyr account", "ok", LONG_TASK, "Done."]
    compaction = agent._context_compressor.last_compaction
    assert compaction.kept_messages == 2
    assert compaction.tokens_after < 0.5 * agent.context_length < compaction.tokens_before
    assert "note" not in compaction.missing and f"{(count - 1) * 7}" in compaction.missing
    assert read_record(agent.short_memory.docs, compaction.archive) == compaction


def test_a_message_kept_word_for_word_keeps_the_time_it_was_said(openai_server, monkeypatch):
    from nbmemory.memory import conversation

    clock = ["2024-01-05T09:00:00"]
    monkeypatch.setattr(conversation, "now_iso", lambda: clock[0])
    agent = http_agent(openai_server)
    agent._context_compressor = ContextCompressor(keep_dropped=False)
    fill_to_just_below_threshold(agent)
    agent.run("short task about the Zephyr account")
    clock[0] = "2024-01-06T17:30:00"  # the next day's run compacts
    openai_server.reply("Budget lines were recorded.")
    openai_server.reply("Done.")
    agent.run(LONG_TASK)
    then, now = "2024-01-05T09:00:00", "2024-01-06T17:30:00"
    said = [(m["content"], m["timestamp"]) for m in stored_messages("Worker")]
    assert said[0][1] == now  # the summary is written now
    assert said[1:] == [
        ("short task about the Zephyr account", then),
        ("ok", then),
        (LONG_TASK, now),
        ("Done.", now),
    ]
    kept = [m["timestamp"] for m in agent.short_memory.conversation_history[-4:]]
    assert kept == [then, then, now, now]


def test_a_message_added_with_a_time_keeps_it_and_a_bad_time_is_refused(workspace):
    from nbmemory import Conversation

    convo = Conversation(name="Clock", memory_md_path=memory_path("Clock"))
    convo.add("User", "Said yesterday.", timestamp="2024-01-05T09:00:00")
    assert stored_messages("Clock")[-1]["timestamp"] == "2024-01-05T09:00:00"
    for bad in ("yesterday", "2024-01-05T09:00:00\n### User", " 2024-01-05", 20240105):
        with pytest.raises(ValueError, match="timestamp must be an ISO 8601"):
            convo.add("User", "Never written.", timestamp=bad)
    assert [m["content"] for m in stored_messages("Clock")] == ["Said yesterday."]


@pytest.mark.parametrize(
    "failure",
    [
        {"status": 500, "error_message": "summarizer down"},
        {"text": "a summary that comes too late", "delay": 6},
        {"text": ""},
    ],
    ids=["http-500", "timeout", "empty"],
)
def test_a_failing_summarizer_loses_nothing_and_waits_before_trying_again(openai_server, failure):
    agent = http_agent(openai_server, timeout=2)
    count = fill_to_just_below_threshold(agent)
    openai_server.reply(**failure)
    openai_server.reply("Answer despite it.")
    with pytest.warns(UserWarning, match="context compression skipped"):
        assert agent.run(LONG_TASK) == "Answer despite it."
    assert len(summary_requests(openai_server)) == 1
    assert agent.short_memory.archives() == []
    on_disk = [m["content"] for m in stored_messages("Worker")]
    assert len(on_disk) == count + 2
    assert not any("summarizer down" in text or "too late" in text for text in on_disk)

    agent.run("one more small question")
    assert len(summary_requests(openai_server)) == 1  # no retry on every loop

    compressor = agent._context_compressor
    waits_until = compressor.tokens_used(agent) + REGROW_SHARE * agent.context_length
    n = 0
    while compressor.tokens_used(agent) < waits_until:  # a real share of the window, then
        agent.short_memory.add("User", f"later note {n}: the budget line is {n} EUR.")
        n += 1
    openai_server.reply("A summary at last.")
    agent.run("and now?")
    assert len(summary_requests(openai_server)) > 1  # tried again once the history grew
    assert len(agent.short_memory.archives()) == 1


def test_a_transcript_larger_than_the_summarizers_window_is_summarized_in_chunks(openai_server):
    agent = http_agent(openai_server)
    big = " ".join(f"w{i:04d}" for i in range(2500))
    for n in range(10):
        agent.short_memory.add("User", f"note {n}: the budget line {n} is {n * 7} EUR.")
    agent.short_memory.add("Tool", big)
    agent.run("Please report totals.")
    requests = summary_requests(openai_server)
    assert len(requests) >= 3  # at least two chunks, then their merge
    sent = " ".join(r["messages"][1]["content"] for r in requests)
    assert all(f"w{i:04d}" in sent for i in range(2500))
    assert all(f"note {i}:" in sent for i in range(10))


def test_between_runs_compress_leaves_the_static_context_and_the_summary_alone(openai_server):
    agent = http_agent(openai_server, system_prompt="Be exact.")
    openai_server.reply("Noted.")
    agent.run("The budget is 40k EUR.")
    openai_server.reply("All about the budget.")
    ContextCompressor().compress(agent)
    roles = [m["role"] for m in agent.short_memory.conversation_history]
    assert roles == ["System", "System"]  # the system prompt, then the summary
    [summary] = stored_messages("Worker")
    assert summary["content"] == (
        f"{SUMMARY_MARKER}\nAll about the budget.\n\nKept word for word:\n- The budget is 40k EUR"
    )
    [request] = summary_requests(openai_server)
    transcript = "User: The budget is 40k EUR.\nWorker: Noted."
    assert request["messages"][1]["content"] == COMPRESSION_USER_TEMPLATE.format(history=transcript)


class SwarmsLikeAgent:
    """Only what swarms' compressor reads from an agent."""

    def __init__(self, short_memory, model_name):
        self.short_memory = short_memory
        self.context_length = short_memory.context_length
        self.model_name = model_name
        self.agent_name = "Plain"


def test_any_agent_like_object_is_measured_and_compressed(openai_server):
    from nbmemory import Conversation

    memory = Conversation(name="Plain", memory_md_path=memory_path("Plain"), context_length=2000)
    plain = SwarmsLikeAgent(memory, "openai/test-model")
    plain.api_base, plain.api_key, plain.max_retries = openai_server.url, "test-key", 0
    compressor = ContextCompressor(threshold=0.5, keep_dropped=False)
    assert compressor.usage_ratio(plain) == memory.count_history_tokens() / 2000
    assert compressor.maybe_compress(plain) is None  # below the threshold
    for n in range(90):
        memory.add("User", f"line {n}: the budget line {n} is {n * 7} EUR.")
    assert compressor.usage_ratio(plain) > 0.5 and compressor.should_compress(plain)
    openai_server.reply("Ninety budget lines.")
    assert compressor.maybe_compress(plain) == "Ninety budget lines."
    assert [m["content"] for m in stored_messages("Plain")] == [
        f"{SUMMARY_MARKER}\nNinety budget lines."
    ]


def test_maybe_compress_turns_a_failure_into_a_warning(openai_server):
    agent = http_agent(openai_server)
    fill_to_just_below_threshold(agent)
    agent.short_memory.add("User", LONG_TASK * 3)
    before = stored("Worker")
    openai_server.reply(status=500, error_message="the summarizer is down")
    with pytest.warns(UserWarning):
        assert agent._context_compressor.maybe_compress(agent) is None
    assert stored("Worker") == before


def test_without_any_model_to_summarize_with_the_error_says_so():
    from nbmemory import Conversation

    memory = Conversation(name="Plain", memory_md_path=memory_path("Plain"))
    memory.add("User", "keep me")
    plain = SwarmsLikeAgent(memory, None)
    before = stored("Plain")
    with pytest.raises(ValueError, match="No summarizer_model set"):
        ContextCompressor().compress(plain)
    assert stored("Plain") == before


# ----------------------------------------------------------------------------------------------
# The model call as a seam, as swarms' tests use it


def litellm_reply(text: str) -> SimpleNamespace:
    """What ``litellm.completion`` returns, reduced to what the compressor reads."""
    return SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content=text))])


def test_the_summarizer_call_can_be_replaced_where_swarms_tests_replace_it():
    compressor = ContextCompressor(
        summarizer_model="gpt-4o", summarizer_temperature=0.2, summarizer_max_tokens=1500
    )
    agent = SimpleNamespace(short_memory=None, context_length=1000, model_name="claude-x")
    with patch(
        "nbmemory.agent.compressor.completion", return_value=litellm_reply("Short.")
    ) as call:
        assert compressor._summarize(agent, "turn 1\nturn 2") == "Short."
    call.assert_called_once()
    sent = call.call_args.kwargs
    assert (sent["model"], sent["temperature"], sent["max_tokens"]) == ("gpt-4o", 0.2, 1500)
    assert sent["messages"] == [
        {"role": "system", "content": COMPRESSION_SYSTEM_PROMPT},
        {"role": "user", "content": COMPRESSION_USER_TEMPLATE.format(history="turn 1\nturn 2")},
    ]


def test_a_replaced_summarizer_compacts_a_real_agent(workspace):
    agent = Agent(agent_name="Seamed", model_name="nbmemory/offline", persistent_memory=True)
    agent.run("The depot is in Lyon.")
    with patch("nbmemory.agent.compressor.completion", return_value=litellm_reply("Depot: Lyon.")):
        assert agent._context_compressor.compress(agent) == "Depot: Lyon."
    [summary] = stored_messages("Seamed")
    assert summary["content"] == f"{SUMMARY_MARKER}\nDepot: Lyon."


def test_by_default_the_summary_is_bounded_by_a_tenth_of_the_window():
    agent = SimpleNamespace(short_memory=None, context_length=3000, model_name="gpt-4o")
    with patch("nbmemory.agent.compressor.completion", return_value=litellm_reply("s")) as call:
        ContextCompressor()._summarize(agent, "history")
    assert call.call_args.kwargs["max_tokens"] == 300


def test_what_the_summary_dropped_is_carried_word_for_word_most_specific_first(openai_server):
    agent = http_agent(openai_server, context_length=3000)
    facts = [f"the access code of vault {n} is ZA{1000 + n}" for n in range(60)]
    for fact in facts:
        agent.short_memory.add("User", f"Please remember: {fact}.")
    agent.short_memory.add("User", "Our contact is Dana, and the coffee machine is fixed.")
    openai_server.reply("Many vault codes were given.")
    summary = agent._context_compressor.compress(agent)
    model_part, _, kept = summary.partition("\n\n")
    assert model_part == "Many vault codes were given."
    assert kept.startswith("Kept word for word:\n- ")
    carried = [n for n in range(60) if f"vault {n} is ZA{1000 + n}" in kept]
    assert carried == list(range(60 - len(carried), 60)), "codes first, the latest first"
    assert len(carried) >= 20
    counter = TokenCounter(agent.model_name)
    assert counter.count(kept) <= agent._context_compressor._summary_tokens(agent)
    compaction = agent._context_compressor.last_compaction
    assert "ZA1059" not in compaction.missing and "ZA1000" in compaction.missing
    assert "ZA1059" in json.dumps(agent.request_messages())


def test_a_preview_changes_nothing_and_is_carried_out_as_shown(openai_server):
    agent = http_agent(openai_server)
    openai_server.reply("Noted.")
    agent.run("The budget is 40k EUR; Dana signs; the code is QX-7781.")
    before = stored("Worker")
    openai_server.reply("A budget was agreed.")
    plan = agent.compact_preview(keep=["Dana"])
    assert stored("Worker") == before and agent.short_memory.archives() == []
    assert plan.summary.startswith("A budget was agreed.\n\nKept word for word:\n- ")
    kept = plan.summary.split("Kept word for word:")[1]
    assert kept.index("Dana") < kept.index("QX-7781"), "the chosen term first"
    assert plan.tokens_after is not None and plan.tokens_after < plan.tokens_before
    assert plan.missing == []  # all three were kept
    requests = len(openai_server.requests)
    done = agent.compact(plan=plan)
    assert len(openai_server.requests) == requests, "the summary shown is the one written"
    assert stored_messages("Worker")[0]["content"] == f"{SUMMARY_MARKER}\n{plan.summary}"
    assert done.tokens_after == agent.next_request_tokens()
    assert abs(done.tokens_after - plan.tokens_after) <= 5, "reckoned as it came out"

    openai_server.reply("Second summary.")
    stale = agent.compact_preview()
    agent.short_memory.add("User", "one more thing")
    with pytest.raises(CompactionError, match="changed since the preview"):
        agent.compact(plan=stale)


def test_a_preview_carried_out_with_its_summary_edited_writes_the_edit(openai_server):
    agent = http_agent(openai_server)
    openai_server.reply("Noted.")
    agent.run("The budget is 40k EUR; Dana signs.")
    openai_server.reply("A budget was agreed.")
    plan = agent.compact_preview()
    requests = len(openai_server.requests)
    done = agent.compact("The budget is 40k EUR.", plan=plan)
    assert len(openai_server.requests) == requests
    assert [m["content"] for m in stored_messages("Worker")] == ["The budget is 40k EUR."]
    assert "Dana" in done.missing

    openai_server.reply(status=500, error_message="the summarizer is down")
    openai_server.reply(status=500, error_message="the summarizer is down")
    with pytest.raises(CompactionError, match="the summarizer failed") as failed:
        agent.compact_preview()
    assert isinstance(failed.value.__cause__, ModelError)


# ----------------------------------------------------------------------------------------------
# Compaction that converges: never when it cannot get below the threshold, never every turn


def _tool_with_a_long_description(words: int):
    def lookup(query: str) -> str:
        return "nothing found"

    lookup.__doc__ = f"Look something up. {' data' * words}\n\nArgs:\n    query: What to find."
    return lookup


FIXED_PARTS = {
    "system prompt": lambda size: {"system_prompt": " data" * size},
    "rules": lambda size: {"rules": " data" * size},
    "pinned notes": lambda size: {},
    "tool schemas": lambda size: {"tools": [_tool_with_a_long_description(size)]},
    "reply room": lambda size: {"max_tokens": size},
}


@pytest.mark.parametrize("window", [800, 2000, 4000])
@pytest.mark.parametrize("part", list(FIXED_PARTS))
def test_an_agent_whose_fixed_parts_fill_the_threshold_never_compacts_and_says_why(
    workspace, window, part
):
    size = int(0.9 * window)
    agent = Agent(
        agent_name="Full", persistent_memory=True, context_length=window, **FIXED_PARTS[part](size)
    )
    if part == "pinned notes":
        agent.notes.budget = 2 * window
        agent.notes.add("Standing order:" + " data" * size)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for turn in range(4):
            agent.run(f"Note {turn}: the sensor in room {turn} reads {turn * 7} degrees.")
    told = [str(w.message) for w in caught if issubclass(w.category, MemoryWarning)]
    assert len(told) == 1, told  # once, not every turn
    assert f"Full: Can't compact below the threshold: the {part} takes" in told[0]
    assert agent.short_memory.archives() == [], "no compaction, no summarizer call"
    assert agent._context_compressor.stuck[0] == part

    usage = ReadModel().usage("Full")  # what %memory, the widget and the panel read
    assert usage.stuck[0] == part and not usage.compacts_next
    assert f"the {part} takes" in usage.to_json()["words"]["stuck"]
    assert f"the {part} takes" in usage_line("Full", usage)
    assert f"Full: Can't compact below the threshold: the {part} takes" in repr(
        AgentTable(ReadModel().agents())  # as %memory and nbmemory ls list the agents
    )


@pytest.mark.parametrize("window", [1200, 2000, 4000])
def test_compaction_in_a_small_window_leaves_room_for_the_next_turns(workspace, window):
    agent = Agent(agent_name="Small", persistent_memory=True, context_length=window)
    compressor = agent._context_compressor
    said = " and the humidity is steady" * (window // 400)
    compacted_at = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", MemoryWarning)  # never stuck here
        for turn in range(120):
            seen = compressor.last_compaction
            agent.run(f"Note {turn}: room {turn} reads {turn * 7} degrees{said}.")
            if compressor.last_compaction is not seen:
                compacted_at.append(turn)
                assert compressor.last_compaction.tokens_after < compressor.threshold * window
            if len(compacted_at) == 4:
                break
    assert len(compacted_at) == 4, "the workload crossed the threshold again and again"
    gaps = [b - a for a, b in itertools.pairwise(compacted_at)]
    assert min(gaps) >= 2, f"compacted on consecutive turns: {compacted_at}"
    assert min(gaps) >= gaps[0] // 2, f"the gaps shrink as summaries grow: {compacted_at}"


def test_after_a_compaction_left_above_the_threshold_the_next_waits_for_real_growth(
    openai_server,
):
    window = 2000
    agent = http_agent(openai_server, context_length=window)
    compressor = agent._context_compressor
    for n in range(6):
        agent.short_memory.add("User", f"Note {n}: the budget line {n} is {n * 7} EUR.")
    openai_server.reply("The budget lines were noted.")  # the summary
    openai_server.reply("OK.")
    with pytest.warns(UserWarning, match="still above the threshold after compaction"):
        agent.run("Check this table: " + " cell" * int(0.9 * window))  # carried word for word
    assert len(agent.short_memory.archives()) == 1
    after = compressor.tokens_used(agent)
    assert after >= compressor.threshold * window, "the fault happened: still above it"

    openai_server.reply("Fine.")
    agent.run("A short question.")
    assert len(agent.short_memory.archives()) == 1, "no compaction for one more exchange"

    def grow_to(tokens: float) -> None:
        while compressor.tokens_used(agent) < tokens:
            agent.short_memory.add("User", "a later note: the budget line is 7 EUR.")

    grow_to(after * 1.12)  # more than a tenth more, less than a quarter of the window
    openai_server.reply("Fine again.")
    agent.run("Another short question.")
    assert len(agent.short_memory.archives()) == 1, "not for a few more messages either"
    grow_to(after + REGROW_SHARE * window)
    openai_server.reply("Everything was noted.")
    openai_server.reply("Done.")
    agent.run("And now?")
    assert len(agent.short_memory.archives()) == 2


def test_the_summary_marker_and_common_words_are_never_dropped_terms(openai_server):
    agent = http_agent(openai_server)
    agent._context_compressor = ContextCompressor(keep_dropped=False)
    agent.short_memory.add("User", "The Lyon move is planned with Priya Shah.")
    openai_server.reply("A move is planned.")
    agent._context_compressor.compress(agent)
    assert stored_messages("Worker")[0]["content"].startswith(SUMMARY_MARKER)
    agent.short_memory.add(
        "User",
        "Plan for the move:\n"
        "- After the audit, call Margot about the 12 desks.\n"
        "- **Bold** rows need ticket QX-7781 (See tab 3, Step 2 of 4).\n"
        "1. Book room B4.",
    )
    openai_server.reply("Margot gets a call.")
    agent._context_compressor.compress(agent)
    compaction = agent._context_compressor.last_compaction
    assert compaction.missing == ["12", "QX-7781", "B4"]
    # Without its record, what it dropped is worked out from the archive, marker and all.
    agent.short_memory.docs.remove(record_path(compaction.archive))
    [_, second] = ReadModel().compactions("Worker")
    assert not second.recorded and second.dropped == ["12", "QX-7781", "B4"]


def test_a_summary_edited_after_the_preview_drops_what_its_measure_said():
    agent = Agent(agent_name="Edited", model_name=OFFLINE_MODEL, persistent_memory=True)
    memory = agent.short_memory
    memory.add("User", "Crate QX-7781 leaves Lyon on 2024-05-02; Dana signs for it.")
    memory.add(
        TOOL_ROLE,
        {"name": "recall_memory", "tool_call_id": "c1", "content": "Vault ZQ-5150 was said."},
    )
    memory.add("Edited", "Noted: QX-7781 leaves Lyon, Dana signs.")
    plan = agent.compact_preview()
    edited = "Crate QX-7781 leaves Lyon."
    # Measured again for the edit, without asking the model: what it drops changes with it.
    measured = agent.compact_preview(summary=edited, plan=plan)
    assert measured.edited and measured.drafted == plan.summary
    assert "Dana" in measured.missing and "Dana" not in plan.missing
    assert measured.tokens_before == plan.tokens_before == ReadModel().usage("Edited").tokens
    # The compaction with that summary drops exactly what the measure said, and records it.
    done = agent.compact(edited, plan=measured)
    assert done.missing == measured.missing
    assert read_record(memory.docs, done.archive).missing == measured.missing
    assert done.tokens_after == measured.tokens_after == agent.next_request_tokens()
    assert [m["content"] for m in stored_messages("Edited")] == [edited]


def test_a_memory_holding_only_its_summary_is_not_compacted_into_the_same_summary(workspace):
    """Compacting again right after a compaction would archive a copy of the memory as it stays:
    refused, with the reason, and nothing is written (no archive the views cannot list)."""
    agent = Agent(agent_name="Twice", model_name=OFFLINE_MODEL, persistent_memory=True)
    agent.run("The launch is on 2027-03-14.")
    agent.compact()
    before = stored("Twice")
    with pytest.raises(CompactionError, match="only its summary"):
        agent.compact()
    assert stored("Twice") == before
    assert len(ReadModel().archives("Twice")) == 1
    agent.run("And the budget is 40k EUR.")
    assert agent.compact().archive is not None  # something new: compacted again
