"""Recall: an agent reaches what it was told before any number of compactions and restarts."""

from __future__ import annotations

import pytest

from nbmemory import Agent, Conversation
from nbmemory.errors import AgentNotFoundError
from nbmemory.memory.preload import SUMMARY_MARKER
from nbmemory.recall import DEFAULT_MODEL, PROMPT_LINE, recall
from nbmemory.recall.text import TOOL_NAME, describe, sub_queries
from nbmemory.store import memory_path
from support import agent_docs, run_python, stored, stored_messages, text_lengths

FACT = "The code name of project Falcon is BLUEFIN-7."
QUESTION = "What is the code name of project Falcon?"

SEED = f"""
from nbmemory import Agent
agent = Agent(agent_name="Keeper", persistent_memory=True, context_length=2000)
agent.run({FACT!r})
for session in range(5):
    for turn in range(6):
        agent.run(f"Filler {{session}}-{{turn}}: the weather was mild and lunch ran long.")
    agent.short_memory.compact(f"Session {{session}}: small talk about weather and lunch.")
"""
ASK = f"""
from nbmemory import Agent
print(Agent(agent_name="Keeper", persistent_memory=True, context_length=2000).run({QUESTION!r}))
"""


def test_the_best_passages_come_with_who_when_and_where(workspace):
    convo = Conversation(name="Scout", memory_md_path=memory_path("Scout"))
    convo.add("User", "The budget is 40k EUR.")
    convo.add("Scout", "Noted: 40k EUR for the warehouse.")
    convo.compact("Money was talked about.")
    convo.add("User", "The deadline is in May.")
    [best, second] = recall(agent_docs("Scout"), "What is the budget in EUR?", limit=2)
    assert (best.role, best.text) == ("User", "The budget is 40k EUR.")
    assert best.source.startswith("history_") and best.index == 0 and best.timestamp
    assert second.text == "Noted: 40k EUR for the warehouse."
    deadline = recall(agent_docs("Scout"), "deadline", semantic=None)  # by words alone
    assert [p.text for p in deadline] == ["The deadline is in May."]
    text = describe("budget", [best])
    assert "[1] User at " in text and best.source in text and "40k EUR" in text
    assert "Nothing said" in describe(
        "zeppelin", recall(agent_docs("Scout"), "zeppelin", semantic=None)
    )


def test_the_question_itself_and_recalls_own_results_are_never_recalled(workspace):
    convo = Conversation(name="Echo", memory_md_path=memory_path("Echo"))
    convo.add("User", FACT)
    convo.add("User", QUESTION)
    convo.add("Echo", {"content": None, "tool_calls": [{"id": "1", "function": {}}]})
    convo.add("Tool", {"tool_call_id": "1", "name": TOOL_NAME, "content": f"[1] {FACT}"})
    assert [p.text for p in recall(agent_docs("Echo"), QUESTION)] == [FACT]


def test_a_question_asked_before_is_recalled_by_the_answer_it_got(workspace):
    convo = Conversation(name="Again", memory_md_path=memory_path("Again"))
    convo.add("User", "What is the wifi password?")
    convo.add("Again", "It is hunter2, on the sticker under the router.")
    convo.add("User", "The wifi at the office is slow.")
    convo.add("User", "I changed the password of my email.")
    convo.add("User", "What is the wifi password?")  # asked again: no answer yet
    [best, *_] = recall(agent_docs("Again"), "What is the wifi password?", semantic=None)
    assert (best.text, [p.text for p in best.beside]) == (
        "It is hunter2, on the sticker under the router.",
        ["What is the wifi password?"],
    )


def test_the_question_just_asked_is_not_shown_beside_what_was_said_before_it(workspace):
    asked = "Remind me which warehouse we use for the dashboards."
    convo = Conversation(name="Echo", memory_md_path=memory_path("Echo"))
    convo.add("User", "Our warehouse is ClickHouse, for the dashboards.")
    convo.add("User", "The dashboards load slowly on Mondays.")
    convo.add("User", asked)
    for semantic in (None, DEFAULT_MODEL):
        found = recall(agent_docs("Echo"), asked, semantic=semantic)
        shown = [p.text for passage in found for p in (passage, *passage.beside)]
        assert "The dashboards load slowly on Mondays." in shown and asked not in shown


def test_a_fact_told_in_the_questions_own_words_is_recalled_the_question_is_not(workspace):
    convo = Conversation(name="Echo", memory_md_path=memory_path("Echo"))
    convo.add("User", "Fahim: I just watched Spongebob for the first time")
    convo.add("User", "Fahim: Spongebob is better than the show I watched before")
    convo.add("User", "When did I watch Spongebob for the first time?")
    found = recall(agent_docs("Echo"), "When did Fahim watch Spongebob for the first time?")
    texts = [p.text for p in found]
    assert texts[0] == "Fahim: I just watched Spongebob for the first time"
    assert "When did I watch Spongebob for the first time?" not in texts


def test_a_compaction_summary_is_not_recalled_the_message_it_kept_is(workspace):
    convo = Conversation(name="Keeper", memory_md_path=memory_path("Keeper"))
    convo.add("Maya", FACT)
    convo.add("Tomas", "Lunch ran long again.")
    convo.compact(f"{SUMMARY_MARKER}\nMaya: code name of project Falcon is BLUEFIN-7.")
    found = recall(agent_docs("Keeper"), QUESTION)
    assert [(p.role, p.text) for p in found] == [("Maya", FACT)]
    assert found[0].source.startswith("history_")  # an archive


def test_a_fact_from_before_five_compactions_reaches_an_agent_in_a_new_process(workspace):
    run_python(SEED)
    assert len(agent_docs("Keeper").archives()) == 5
    memory = stored("Keeper").decode()
    assert "BLUEFIN-7" not in memory  # only the archives hold it now
    answer = run_python(ASK).stdout
    assert "BLUEFIN-7" in answer
    on_disk = stored_messages("Keeper")
    call, result = on_disk[-3], on_disk[-2]
    assert call["content"]["tool_calls"][0]["function"]["name"] == TOOL_NAME
    assert result["content"]["name"] == TOOL_NAME and "BLUEFIN-7" in result["content"]["content"]


def test_over_http_the_tool_is_offered_called_and_its_answer_reaches_the_model(openai_server):
    Conversation(name="Wired", memory_md_path=memory_path("Wired")).add("User", FACT)
    Conversation(name="Wired", memory_md_path=memory_path("Wired")).compact("Small talk.")
    openai_server.reply(tool_calls=[{"name": TOOL_NAME, "arguments": {"query": "Falcon"}}])
    openai_server.reply("It is BLUEFIN-7.")
    agent = Agent(
        agent_name="Wired",
        model_name="openai/test-model",
        api_base=openai_server.url,
        api_key="test-key",
        max_retries=0,
        persistent_memory=True,
    )
    assert agent.run(QUESTION) == "It is BLUEFIN-7."  # max_loops=1: recall uses up no loop
    first, second = openai_server.requests
    assert first["messages"][0]["content"].startswith(PROMPT_LINE)
    schema, _around, _between, _notes_tool = first["tools"]
    assert schema["function"]["name"] == TOOL_NAME
    assert schema["function"]["parameters"]["required"] == ["query"]
    result = second["messages"][-1]
    assert result["role"] == "tool" and FACT in result["content"]
    assert "history_" in result["content"]  # where it was found
    roles = [m["role"] for m in stored_messages("Wired")]
    assert roles[-4:] == ["User", "Wired", "Tool", "Wired"]


def test_recall_is_off_for_ephemeral_agents_and_on_request(openai_server):
    options = {"model_name": "openai/test-model", "api_base": openai_server.url, "api_key": "k"}
    for agent in [
        Agent(agent_name="Air", persistent_memory=False, **options),
        Agent(agent_name="Mute", persistent_memory=True, recall=False, **options),
    ]:
        agent.run("hello")
        request = openai_server.requests[-1]
        assert TOOL_NAME not in [t["function"]["name"] for t in request.get("tools", [])]
        assert all(PROMPT_LINE not in str(m["content"]) for m in request["messages"])
    assert "tools" not in openai_server.requests[0]  # an ephemeral agent has no memory tools


@pytest.mark.parametrize("store", ["files", "database"])
def test_an_append_extends_the_index_and_a_compaction_builds_a_new_one(store, request, monkeypatch):
    from nbmemory.recall import file_index
    from nbmemory.store.follow import follow

    if store == "database":
        request.getfixturevalue("database")
    convo = Conversation(name="Grow", memory_md_path=memory_path("Grow"))
    convo.add("Tool", "filler words " * 100_000)
    convo.add("User", FACT)
    docs = agent_docs("Grow")
    tokenized = text_lengths(monkeypatch, file_index, "words")
    assert [p.text for p in recall(docs, "Falcon")] == [FACT]
    index = follow(memory_path("Grow"), docs).grown["recall"]
    for n in range(3):
        convo.add("User", f"Note {n} about project Falcon.")
        assert recall(docs, "Falcon")[0].text == f"Note {n} about project Falcon."
        assert follow(memory_path("Grow"), docs).grown["recall"] is index  # extended
    assert len(index.messages) == 5
    assert tokenized.count(len("filler words " * 100_000)) == 1  # the big message, once
    convo.compact("Project Falcon was discussed.")
    recall(docs, "Falcon")
    assert follow(memory_path("Grow"), docs).grown["recall"] is not index  # rewritten: anew


def test_a_message_said_after_a_recall_is_found_by_meaning_at_once(workspace):
    convo = Conversation(name="Pets", memory_md_path=memory_path("Pets"))
    convo.add("Maya", "Lunch ran long again.")
    convo.compact("Small talk.")  # an archive: recall keeps what it worked out of it
    convo.add("Tomas", "The weather was mild.")
    docs = agent_docs("Pets")
    assert "Maya" not in [p.role for p in recall(docs, "Which dog breed?")]  # asked once
    convo.add("Maya", "We adopted a beagle puppy.")  # not one word of the question
    [found, *_] = recall(docs, "Which dog breed?")  # the default ranking: by meaning too
    assert (found.role, found.text) == ("Maya", "We adopted a beagle puppy.")


def test_a_compaction_right_after_a_recall_is_searched_at_once(workspace):
    convo = Conversation(name="Moves", memory_md_path=memory_path("Moves"))
    convo.add("Maya", "Lunch ran long again.")
    convo.compact("Small talk.")
    convo.add("Maya", FACT)
    docs = agent_docs("Moves")
    [before] = recall(docs, QUESTION, limit=1)
    assert before.text == FACT and before.source == "MEMORY.md"
    convo.compact("Project Falcon was discussed.")
    [after] = recall(docs, QUESTION, limit=1)  # found where the compaction put it
    assert after.text == FACT and after.source == agent_docs("Moves").archives()[-1].name


def test_an_archive_removed_or_put_back_is_seen_by_the_next_recall(workspace):
    convo = Conversation(name="Kept", memory_md_path=memory_path("Kept"))
    convo.add("Maya", FACT)
    convo.compact("Project Falcon was discussed.")
    convo.add("Tomas", "Lunch ran long again.")
    convo.compact("Small talk.")
    docs = agent_docs("Kept")
    first, _ = docs.archives()
    held = docs.read(first)
    assert [p.text for p in recall(docs, QUESTION, limit=1)] == [FACT]
    docs.remove(first)  # a person deletes the archive: its messages are gone
    assert FACT not in [p.text for p in recall(docs, QUESTION)]
    convo.add("Tomas", "The weather was mild.")
    assert FACT not in [p.text for p in recall(docs, QUESTION)]
    docs.write(first, held)  # and puts it back, MEMORY.md unchanged since the last recall
    assert [p.text for p in recall(docs, QUESTION, limit=1)] == [FACT]


def test_a_query_counts_only_its_first_distinct_words():
    from nbmemory.recall.ranking import QUERY_TERMS, query_terms
    from nbmemory.recall.text import QUERY_CHARS

    convo = Conversation(name="Capped", memory_md_path=memory_path("Capped"))
    convo.add("User", FACT)
    docs = agent_docs("Capped")
    fillers = [f"filler{n}" for n in range(QUERY_TERMS)]
    assert query_terms(" ".join(fillers * 3 + ["BLUEFIN"])) == fillers
    assert recall(docs, " ".join([*fillers, "BLUEFIN"])) == []  # past the cap: not looked for
    assert [p.text for p in recall(docs, " ".join(["BLUEFIN", *fillers]))] == [FACT]
    assert query_terms("? " * QUERY_CHARS + "BLUEFIN") == []  # past the characters looked at
    assert len(query_terms("w" + " w".join(str(n) for n in range(50_000)))) == QUERY_TERMS


def test_the_tool_says_how_much_of_a_query_counts():
    from nbmemory.agent.tools import ToolBox
    from nbmemory.recall import recall_tool
    from nbmemory.recall.ranking import QUERY_TERMS

    [schema] = ToolBox([recall_tool(lambda: None)]).schemas()
    described = schema["function"]["parameters"]["properties"]["query"]["description"]
    assert described.startswith(f"Up to {QUERY_TERMS} words,")


def said(name: str, *turns: tuple[str, str]) -> None:
    """``turns`` (speaker, text) said in order to agent ``name``'s memory."""
    convo = Conversation(name=name, memory_md_path=memory_path(name))
    for role, text in turns:
        convo.add(role, text)


def test_a_question_in_other_forms_of_the_words_finds_the_fact(workspace):
    said(
        "Forms",
        ("User", "Priya bought the tickets for Lisbon."),
        ("Priya", "Lunch ran long again today."),
        ("User", "The tickets are on the kitchen table."),
    )
    [best, _] = recall(agent_docs("Forms"), "Who buys the tickets?", limit=2)
    assert best.text == "Priya bought the tickets for Lisbon."


def test_a_when_question_finds_the_turn_that_says_when(workspace):
    said(
        "Dates",
        ("Maya", "We moved to Lyon last spring."),
        ("Tomas", "Lunch ran long again today."),
        ("Maya", "Moving to Lyon was the best choice."),
    )
    [best, _] = recall(agent_docs("Dates"), "When did Maya move to Lyon?", limit=2)
    assert best.text == "We moved to Lyon last spring." and best.timestamp


def test_a_when_question_counts_an_answers_date_not_the_next_messages(workspace):
    said(
        "Books",
        ("Fahim", "The book is Pachinko."),
        ("Fahim", "Pachinko is still huge in Japan today, and the parlours are full every night."),
        ("Akib", "I finished the dishes and finished my tea."),
        ("Fahim", "I finished Pachinko, a wonderful story."),
        ("Akib", "When did you start reading the Pachinko book?"),
        ("Fahim", "On New Year's Day."),
        ("Akib", "Did you start reading the Pachinko book for the club?"),
        ("Fahim", "No, for myself."),
    )
    # "today" in the message after the first is about its own day, not the book's end.
    [best] = recall(agent_docs("Books"), "When did Fahim finish Pachinko?", limit=1)
    assert best.text == "I finished Pachinko, a wonderful story."
    # A question's answer says when for the question: of two askings, the one answered so.
    [best] = recall(agent_docs("Books"), "When did Fahim start the Pachinko book?", limit=1)
    assert [p.text for p in best.beside] == ["On New Year's Day."]


def test_a_question_naming_a_day_favours_what_was_said_that_day(workspace, monkeypatch):
    from nbmemory.memory import conversation

    stamps = iter(["2024-01-21T19:52:41", "2024-01-22T21:36:19", "2024-01-25T09:10:00"])
    monkeypatch.setattr(conversation, "now_iso", lambda: next(stamps))
    said(
        "Classes",
        ("Kevin", "My economics class was about fiscal policy today."),
        ("Paola", "Lunch ran long again today."),
        ("Kevin", "The economics class was about trade today, a fine class."),
    )
    asked = "What was Kevin's economics class about on 21.01.2024?"
    [best] = recall(agent_docs("Classes"), asked, limit=1, semantic=None)
    assert best.text == "My economics class was about fiscal policy today."
    [best] = recall(agent_docs("Classes"), asked.replace(" on 21.01.2024", ""), limit=1)
    assert best.text == "The economics class was about trade today, a fine class."


def test_naming_a_person_favours_what_they_said(workspace):
    said(
        "People",
        ("Tomas", "I play the cello in a quartet."),
        ("Maya", "I play the trumpet in a brass band."),
    )
    assert recall(agent_docs("People"), "What does Tomas play?")[0].role == "Tomas"
    assert recall(agent_docs("People"), "What does Maya play?")[0].role == "Maya"


def test_a_question_is_recalled_with_its_answer_beside_it(workspace):
    question, answer = "Which instrument did you pick in the end?", "The cello, from Monday."
    said(
        "Pairs",
        ("Maya", question),
        ("Tomas", answer),
        ("User", "Did you know our office moved to Lyon?"),  # a question that tells
    )
    [best] = recall(agent_docs("Pairs"), "Which instrument did Tomas pick?", limit=1)
    assert (best.text, [(p.role, p.text) for p in best.beside]) == (question, [("Tomas", answer)])
    shown = describe("instrument", [best])
    assert f"[1] Maya at {best.timestamp}" in shown and "[1+] Tomas at " in shown
    assert shown.index(question) < shown.index(answer)
    found = recall(agent_docs("Pairs"), "Where is the office?")
    assert [p.text for p in found] == ["Did you know our office moved to Lyon?"]


def test_what_a_person_says_in_several_messages_in_a_row_comes_as_one_passage(workspace):
    said(
        "Pets",
        ("Nebraas", "Remember my puppy from earlier."),
        ("Nebraas", "I named him Steve."),
        ("Vanessa", "Steve is a great name for a dog."),
        ("Vanessa", "My sister has a puppy too."),
    )
    [best] = recall(agent_docs("Pets"), "What did Nebraas say about the puppy?", limit=1)
    assert (best.text, [p.text for p in best.beside]) == (
        "Remember my puppy from earlier.",
        ["I named him Steve."],
    )
    # Another person's message between two of hers is no continuation: the answer is beside.
    [best] = recall(agent_docs("Pets"), "Whose sister has a puppy?", limit=1)
    assert (best.text, [p.text for p in best.beside]) == (
        "My sister has a puppy too.",
        ["Steve is a great name for a dog."],
    )


def test_a_fact_said_again_changed_ranks_the_newer_first(workspace):
    said(
        "Moves",
        ("User", "Our office is in Lyon."),
        ("User", "Lunch was long today."),
        ("User", "Our office is in Porto now."),
    )
    found = recall(agent_docs("Moves"), "Where is our office?", limit=2)
    assert [p.text for p in found] == ["Our office is in Porto now.", "Our office is in Lyon."]


def test_the_tool_says_it_may_be_called_once_per_fact():
    from nbmemory.agent.tools import ToolBox
    from nbmemory.recall import recall_tool

    [schema] = ToolBox([recall_tool(lambda: None)]).schemas()
    assert "once per fact" in " ".join(schema["function"]["description"].split())


def test_a_two_part_question_is_answered_one_call_per_part(workspace):
    said(
        "Garden",
        ("Maya", "Tomas helped me plant the tomatoes along the fence."),
        ("Tomas", "Lunch ran long again today."),
        ("Maya", "Tomas and I plant more tomatoes every spring."),
        ("Tomas", "The bus was late."),
        ("Maya", "I told Tomas the tomatoes we plant need more sun."),
        ("Tomas", "It rained all morning."),
        ("Maya", "Tomas says we plant too close together."),
        ("Tomas", "I planted basil in pots on my balcony."),
    )
    question = "What did Maya and Tomas plant?"
    basil = "I planted basil in pots on my balcony."
    # Asked whole, Maya's messages say every word asked (both names, "plant") and come first.
    whole = recall(agent_docs("Garden"), question, limit=3)
    assert [p.role for p in whole] == ["Maya"] * 3 and basil not in [p.text for p in whole]
    # One call per part, as the tool's description invites and the offline model does.
    maya, tomas = sub_queries(question)
    assert recall(agent_docs("Garden"), maya, limit=1)[0].role == "Maya"
    assert recall(agent_docs("Garden"), tomas, limit=1)[0].text == basil


def test_a_question_in_other_words_finds_its_answer_by_meaning(workspace):
    said(
        "Trip",
        ("Tomas", "Which airline did you book for the Kyoto trip?"),
        ("Maya", "We booked the Kyoto trip with Nippon Air."),
        ("Maya", "The cat knocked a plant off the shelf."),
        ("Tomas", "Lunch ran long again today."),
        ("Maya", "Nippon Air moved our departure to 7:40 in the morning."),
        ("Tomas", "My phone screen cracked again."),
    )
    # No word of the question but the name is in the answer: by words alone it is not found,
    # by meaning ("leave", "departure") it is.
    found = recall(agent_docs("Trip"), "What time does Maya's Kyoto trip leave?", semantic=None)
    assert "Nippon Air moved our departure to 7:40 in the morning." not in [p.text for p in found]
    found = recall(agent_docs("Trip"), "What time does Maya's Kyoto trip leave?", limit=3)
    assert "Nippon Air moved our departure to 7:40 in the morning." in [p.text for p in found]
    best = [found[0].text, *(p.text for p in found[0].beside)]
    assert best == [
        "Which airline did you book for the Kyoto trip?",
        "We booked the Kyoto trip with Nippon Air.",
    ]


@pytest.mark.files("an agent's folder names its documents on files only")
def test_recall_takes_an_agent_folder_on_files(workspace):
    convo = Conversation(name="Scout", memory_md_path=memory_path("Scout"))
    convo.add("User", "The budget is 40k EUR.")
    convo.compact("Money was talked about.")
    folder = memory_path("Scout").parent
    for given in (folder, str(folder), folder / "MEMORY.md"):
        assert recall(given, "budget", semantic=None)[0].text == "The budget is 40k EUR."
    assert recall(folder, "budget") == recall(agent_docs("Scout"), "budget")
    for wrong in (folder.parent, folder / "archive", workspace / "nowhere"):
        with pytest.raises(AgentNotFoundError, match="holds no agent's memory"):
            recall(wrong, "budget")


def test_a_transcript_fed_to_an_agent_is_recalled_as_its_people_said_it(workspace):
    from nbmemory.recall import kept_indexes
    from nbmemory.store import follow

    agent = Agent(agent_name="Log", persistent_memory=True)
    asked = "[8 May 2023] Maya: Are you still thinking about learning an instrument?"
    answer = "[8 May 2023] Tomas: I went for the harp. First lesson was last Friday."
    for line in [
        asked,
        answer,
        "Maya: I adopted a tabby kitten from the animal shelter.",
        "Tomas: Lunch ran long again today.",
    ]:
        agent.run(line)  # the offline model answers each line, repeating or quoting them
    replies = [m for m in agent.short_memory.conversation_history if m["role"] == "Log"]
    assert len(replies) >= 4 and any("kitten" in str(m["content"]) for m in replies)
    for compacted in (False, True):
        if compacted:
            agent.compact()
            kept_indexes._kept.clear()
            follow._followed.clear()
        # Who speaks is the name a line opens with (after its time); the question carries its
        # answer beside it, across the agent's reply between them.
        [best] = recall(agent_docs("Log"), "Which instrument is Tomas learning?", limit=1)
        assert (best.text, [p.text for p in best.beside]) == (asked, [answer])
        # A reply that only repeats what it was told is not recalled: what was told is.
        found = recall(agent_docs("Log"), "kitten from the animal shelter", limit=5)
        assert {p.role for p in found} == {"User"}
        assert found[0].text == "Maya: I adopted a tabby kitten from the animal shelter."


def test_an_agent_that_hears_several_people_keeps_each_ones_exchanges_apart(workspace):
    said(
        "Club",
        ("Tomas", "How was your weekend?"),
        ("Maya", "I ran a marathon yesterday."),
        ("Omar", "How was your weekend?"),
        ("Lena", "I swam in the open water relay race on Sunday."),
        ("Omar", "Lunch ran long again today."),
    )
    # No word of the question is in either answer: by meaning alone, Maya's is nearer, but the
    # question names Lena.
    [best, *_] = recall(agent_docs("Club"), "What athletic event did Lena compete in?")
    assert (best.role, best.text) == ("Lena", "I swam in the open water relay race on Sunday.")


def test_what_another_exchange_said_counts_less_for_a_question_naming_someone(workspace):
    said(
        "Club",
        ("Tomas", "How was your summer?"),
        (
            "Maya",
            "Our summer holiday trip to the seaside in Lisbon was lovely, the best summer trip "
            "to the seaside by train ever.",
        ),
        ("Omar", "How was your summer?"),
        ("Lena", "I was in Kyoto for the holiday."),
        *[("Lena", f"Work was busy on day {n}.") for n in range(6)],
        *[("Omar", f"Same here, day {n}.") for n in range(6)],
    )
    # Maya's message says more of the question, but it is another exchange's: Lena neither
    # said it nor was told it, and it does not name her.
    asked = "Where did Lena go on her summer holiday trip to the seaside by train?"
    [best, *_] = recall(agent_docs("Club"), asked, semantic=None)
    assert (best.role, best.text) == ("Lena", "I was in Kyoto for the holiday.")


def test_a_line_opening_with_a_heading_keeps_its_words(workspace):
    said("Memo", ("User", "Decision: we rent the harp for a year."), ("User", "Lunch ran long."))
    # "Decision" is a heading, not a speaker's name: it stays a word of the line.
    found = recall(agent_docs("Memo"), "decision", semantic=None)
    assert [(p.role, p.text) for p in found] == [("User", "Decision: we rent the harp for a year.")]


def test_a_megabyte_run_of_one_letter_is_indexed_as_one_term_and_recall_goes_on(workspace):
    from nbmemory.recall import kept_indexes

    run = "y" * 1_000_000  # Snowball's step on "y" took a minute over it
    convo = Conversation(name="Long", memory_md_path=memory_path("Long"))
    convo.add("User", f"{run} and the key is under the mat")
    convo.add("User", "The budget is 40k EUR.")
    convo.compact("Two messages.")
    convo.add("User", run)
    [best] = recall(agent_docs("Long"), "Where is the key?", limit=1)
    assert best.text.endswith("and the key is under the mat")
    [archive] = agent_docs("Long").archives()
    kept = kept_indexes._kept[f"{agent_docs('Long')!r}\n{archive}"][1]
    assert kept.postings(run) == ([0], [1])  # the run as it is, its own term


def test_a_name_spelled_another_way_finds_what_that_speaker_said(workspace):
    convo = Conversation(name="Chat", memory_md_path=memory_path("Chat"))
    muhhamed = "Muhhamed: I finished the new Zelda game last night."
    akib = "Akib: I finished that Zelda game last night too."
    convo.add("User", muhhamed)
    convo.add("User", akib)
    docs = agent_docs("Chat")

    def best(query: str) -> str:
        return recall(docs, query, 1, semantic=None)[0].text

    # Equal by their words, the newer first; the name, spelled as the asker spells it, decides.
    assert best("Which game did someone finish?") == akib
    assert best("Which game did Mohammed finish?") == muhhamed
    assert best("Which game did Aqib finish?") == akib


def test_a_name_the_memory_holds_is_not_taken_for_a_speaker(workspace):
    convo = Conversation(name="Pets", memory_md_path=memory_path("Pets"))
    convo.add("User", "Maxine: Max the dog eats salmon.")
    convo.add("User", "Maxine: I eat rice.")
    [best] = recall(agent_docs("Pets"), "What does Max eat?", 1, semantic=None)
    assert best.text == "Maxine: Max the dog eats salmon."


def test_a_message_a_compaction_kept_is_one_passage_not_two(workspace):
    convo = Conversation(name="Kept", memory_md_path=memory_path("Kept"))
    convo.add("User", "Vanessa: I saw my toxic ex at work today.")
    convo.add("User", "Vanessa: He did not notice me, thankfully.")
    said = convo.conversation_history[-1]
    convo.compact("Vanessa talked about work.")
    # As the compressor does: the last message kept word for word, with its time.
    convo.add(said["role"], said["content"], timestamp=said["timestamp"])
    convo.add("User", "Nicolas: My cat caught a mouse.")
    found = recall(agent_docs("Kept"), "Did Vanessa notice her ex?", 5, semantic=None)
    texts = [p.text for passage in found for p in (passage, *passage.beside)]
    assert texts.count("Vanessa: He did not notice me, thankfully.") == 1
    assert "Vanessa: I saw my toxic ex at work today." in texts


def test_a_question_asked_twice_and_answered_differently_is_two_passages(workspace):
    convo = Conversation(name="Asked", memory_md_path=memory_path("Asked"))
    for day, answer in (("03", "At the Lisbon office."), ("10", "At the Porto office now.")):
        asked = f"2026-03-{day}T09:00:00"
        convo.add("User", "Where do we meet the client for the budget review?", timestamp=asked)
        convo.add("Asked", answer, timestamp=asked)
        convo.compact("The client meeting was discussed.")  # each asking in its own file
    found = recall(agent_docs("Asked"), "budget review", 5, semantic=None)
    assert [p.text for passage in found for p in passage.beside] == [
        "At the Porto office now.",
        "At the Lisbon office.",
    ]


def test_a_passage_whose_two_messages_match_ranks_above_one_whose_one_does(workspace):
    convo = Conversation(name="Rental", memory_md_path=memory_path("Rental"))
    convo.add("User", "Maya: The harp rental is booked.")
    convo.add("User", "Maya: The harp costs 40 EUR a week.")
    convo.add("User", "Tomas: Lunch ran long.")
    convo.add("User", "Ines: The harp rental is booked.")  # as good a match, and newer
    convo.add("User", "Ines: Then I went home.")
    [best] = recall(agent_docs("Rental"), "harp rental", 1, semantic=None)
    assert [best.text, *(p.text for p in best.beside)] == [
        "Maya: The harp rental is booked.",
        "Maya: The harp costs 40 EUR a week.",
    ]
