import json

import pytest

from nbmemory.models import llm
from nbmemory.models.offline import bm25, respond, summarize
from nbmemory.terms import words

SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search_knowledge_base",
        "description": "Search the internal knowledge base and return matching passages.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "Words to look for."}},
            "required": ["query"],
        },
    },
}
PRELOAD = (
    "[Persistent Memory — MEMORY.md]\nintro\n\n"
    "### User — 2026-04-20T18:35:04\n\nOur warehouse is ClickHouse.\n\n---\n\n"
    "### Scout — 2026-04-20T18:35:05\n\nNoted: ClickHouse it is.\n\n---\n\n"
    "### User — 2026-04-20T18:35:06\n\nThe budget is 40k EUR.\n\n---\n\n"
)


def test_words_fold_forms_and_drop_stopwords():
    assert words("What do the Documents say about the notes?") == ["document", "note"]
    assert words("picked pick") == ["pick", "pick"] and words("named name") == ["name", "name"]
    assert words("bought buying buys") == ["buy", "buy", "buy"]  # irregular forms too


def test_bm25_prefers_the_matching_document():
    scores = bm25(["warehouse"], [["budget"], ["warehouse", "clickhouse"], []])
    assert scores[1] > 0 and scores[0] == scores[2] == 0


def test_it_answers_by_quoting_the_most_relevant_memory_and_its_reply():
    reply = respond(
        [{"role": "system", "content": PRELOAD}, {"role": "user", "content": "Which warehouse?"}]
    )
    assert reply.content == (
        "From what I remember:\n\nUser said earlier:\n> Our warehouse is ClickHouse.\n\n"
        "Scout said earlier:\n> Noted: ClickHouse it is."
    )
    assert reply.finish_reason == "stop"


def test_with_nothing_relevant_it_says_so():
    reply = respond([{"role": "system", "content": PRELOAD}, {"role": "user", "content": "Hello!"}])
    assert reply.content == "I have nothing earlier about this yet; noted: Hello!"


def test_it_calls_a_tool_that_offers_what_the_task_asks_for_then_answers_from_it():
    task = {
        "role": "user",
        "content": "Summarize what our renewable energy documents say about storage.",
    }
    first = respond([task], [SEARCH_TOOL])
    assert first.finish_reason == "tool_calls"
    assert first.tool_calls[0].name == "search_knowledge_base"
    assert json.loads(first.tool_calls[0].arguments) == {"query": task["content"]}
    result = {
        "role": "tool",
        "tool_call_id": first.tool_calls[0].id,
        "content": "Batteries: $95/kWh.",
    }
    second = respond([task, first.message(), result], [SEARCH_TOOL])
    assert second.content == "search_knowledge_base returned: Batteries: $95/kWh."


def test_it_leaves_tools_alone_when_the_task_does_not_need_them():
    assert respond([{"role": "user", "content": "Good morning"}], [SEARCH_TOOL]).tool_calls == []


def test_it_summarizes_extractively_within_the_length_asked():
    text = " ".join(
        f"Project {i} has a budget of {i * 1000} EUR and is led by Ana." for i in range(40)
    )
    reply = respond(
        [{"role": "user", "content": f"Summarize the conversation below.\n\n{text}"}], max_tokens=50
    )
    assert 0 < len(reply.content.split()) <= 30
    assert all(sentence in text for sentence in reply.content.split(". "))
    assert summarize("Short.") == "Short."


def test_it_is_deterministic():
    messages = [{"role": "system", "content": PRELOAD}, {"role": "user", "content": "budget?"}]
    assert respond(messages) == respond(messages)


def test_it_streams_word_by_word():
    messages = [
        {"role": "system", "content": PRELOAD},
        {"role": "user", "content": "Which warehouse?"},
    ]
    pieces: list[str] = []
    streamed = llm.complete("nbmemory/offline", messages, on_delta=pieces.append)
    assert len(pieces) > 3
    assert "".join(pieces) == streamed.content == respond(messages).content
    called = llm.complete(
        "nbmemory/offline",
        [{"role": "user", "content": "Search the documents about storage"}],
        tools=[SEARCH_TOOL],
        on_delta=pieces.append,
    )
    assert called.tool_calls[0].name == "search_knowledge_base"


SUMMARY_TASK = "Summarize this.\n\n" + " ".join(
    f"Project {i} has a budget of {i * 1000} EUR and is led by Ana." for i in range(20)
)


@pytest.mark.parametrize(
    ("messages", "options"),
    [
        (
            [
                {"role": "system", "content": PRELOAD},
                {"role": "user", "content": "Which warehouse?"},
            ],
            {},
        ),
        (
            [{"role": "user", "content": "Search the documents about storage"}],
            {"tools": [SEARCH_TOOL]},
        ),
        ([{"role": "user", "content": "Hello!"}], {"tools": [SEARCH_TOOL]}),
        ([{"role": "user", "content": SUMMARY_TASK}], {"max_tokens": 20}),
    ],
)
def test_it_answers_as_litellm_would_hand_its_answer_back(messages, options):
    """nbmemory answers the offline model without litellm; litellm (for code calling it
    directly) serves the same model: both give the same answer, streamed or not."""
    direct: list[str] = []
    answer = llm.complete("nbmemory/offline", messages, **options)
    streamed = llm.complete("nbmemory/offline", messages, on_delta=direct.append, **options)
    response = llm.completion(model="nbmemory/offline", messages=messages, **options)
    lib = llm.litellm()
    served = lib.completion(model="nbmemory/offline", messages=messages, **options)
    chunks = lib.completion(model="nbmemory/offline", messages=messages, stream=True, **options)
    pieces = [
        c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content
    ]
    assert answer == streamed == llm._reply(served.choices[0]) == llm._reply(response.choices[0])
    assert direct == pieces
    assert response.choices[0].finish_reason == served.choices[0].finish_reason


def test_an_earlier_asking_of_the_same_question_is_not_an_answer():
    messages = [
        {"role": "user", "content": "Our warehouse is ClickHouse."},
        {"role": "user", "content": "Which warehouse did we pick?"},
        {"role": "assistant", "content": "Something unrelated."},
        {"role": "user", "content": "Which warehouse did we pick?"},
    ]
    assert respond(messages).content == (
        "From what I remember:\n\nUser said earlier:\n> Our warehouse is ClickHouse."
    )


def test_a_summary_keeps_facts_and_drops_speakers_and_recollections():
    transcript = (
        "User: Our launch date is 14 March.\n"
        "Scout: I have nothing earlier about this yet; noted: Our launch date is 14 March.\n"
        "Scout: From what I remember:\n"
        "User: The budget is 40k EUR."
    )
    assert summarize(transcript) == "Our launch date is 14 March. The budget is 40k EUR."


def test_a_two_part_question_is_recalled_one_part_at_a_time():
    from nbmemory import Agent, Conversation
    from nbmemory.models.offline import sub_queries
    from nbmemory.store import memory_path

    assert sub_queries("What do Maya and Tomas play?") == [
        "What do Maya play?",
        "What do Tomas play?",
    ]
    assert sub_queries("Where is the office and when is the launch?") == [
        "Where is the office?",
        "when is the launch?",
    ]
    assert sub_queries("Which warehouse did we pick?") == ["Which warehouse did we pick?"]
    convo = Conversation(name="Band", memory_md_path=memory_path("Band"))
    convo.add("Tomas", "I play the cello in a quartet.")
    convo.add("Maya", "I play the trumpet in a brass band.")
    convo.compact("Music was talked about.")
    answer = Agent(agent_name="Band", persistent_memory=True).run("What do Maya and Tomas play?")
    assert "trumpet" in answer and "cello" in answer


def test_a_fact_said_a_few_messages_after_the_one_found_is_reached_through_recall_around():
    from nbmemory import Agent, Conversation
    from nbmemory.recall.text import AROUND_TOOL, TOOL_NAME
    from nbmemory.store import memory_path
    from support import stored_messages

    convo = Conversation(name="Family", memory_md_path=memory_path("Family"))
    convo.add("User", "My sister Ines moved to Porto last spring.")
    convo.add("Family", "Porto suits her.")
    convo.add("User", "The weather there was grey all week.")
    convo.add("User", "Now she works by the river, repairing cellos.")
    convo.compact("Family news was shared.")
    agent = Agent(agent_name="Family", persistent_memory=True)
    answer = agent.run("What work does my sister Ines do in Porto?")
    assert "moved to Porto" in answer and "repairing cellos" in answer
    calls = [
        call["function"]
        for message in stored_messages("Family")
        if isinstance(message["content"], dict)
        for call in message["content"].get("tool_calls") or []
    ]
    assert [c["name"] for c in calls] == [TOOL_NAME, AROUND_TOOL]  # one follow-up, no loop
    asked = json.loads(calls[1]["arguments"])
    assert asked["source"].startswith("history_") and asked["message"] == 1


def test_a_found_question_with_no_answer_beside_it_is_followed_by_what_came_after():
    from nbmemory import Agent, Conversation
    from nbmemory.store import memory_path

    convo = Conversation(name="Trip", memory_md_path=memory_path("Trip"))
    convo.add("User", "Which city hosts the design offsite in June?")
    convo.add("User", "Also, the hotel needs booking.")
    convo.add("Trip", "Lisbon, by the river.")
    convo.compact("Travel was planned.")
    answer = Agent(agent_name="Trip", persistent_memory=True).run(
        "Which city hosts the design offsite?"
    )
    assert "Lisbon" in answer
