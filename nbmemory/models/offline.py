"""``nbmemory/offline``: a small deterministic model that runs with no key and no network.

It does real work with its context, so demos and tests show memory reaching the model:
it answers by quoting the earlier messages or pinned notes most relevant to the task (BM25),
calls a tool when the task asks for what the tool offers and then answers from the tool's
result, recalls when its context lacks the answer (a two-part question one part at a time, and
once more around a passage that does not hold all that was asked: ``recall_around``), pins what
it is asked to remember
("Remember: ..."), and summarizes extractively when asked to. nbmemory calls it directly,
without litellm (``llm.py``); it is also registered with litellm as a custom provider, for code
that calls litellm itself.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from nbmemory.memory.notes import MARKER as NOTES_MARKER
from nbmemory.memory.notes import TOOL_NAME as NOTES
from nbmemory.memory.notes import parse as parse_notes
from nbmemory.memory.notes import saved_notes
from nbmemory.memory.preload import SUMMARY_MARKER, preloaded_messages
from nbmemory.memory.search import content_text
from nbmemory.models.reply import Reply, ToolCall
from nbmemory.recall.text import AROUND_TOOL, RECALL_TOOLS, Passage, described, sub_queries
from nbmemory.recall.text import TOOL_NAME as RECALL
from nbmemory.terms import bm25_term, idf, is_question, words
from nbmemory.wording import FIRST_NUMBER

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
# Words that ask for stored knowledge, and the words a retrieval tool describes itself with.
_LOOKUP_ASKS = frozenset(
    "document docs file files note notes record records database knowledge source sources".split()
)
_LOOKUP_TOOLS = frozenset("search find lookup look retrieve query knowledge fetch".split())
_RECALLED = "From what I remember:"
_SPEAKERS = {"user": "User", "assistant": "I", "tool": "A tool"}
_LINE_ROLE = re.compile(r"^[^\n:]{1,80}: ", re.MULTILINE)
_SUMMARY = SUMMARY_MARKER
_NOTHING = "I have nothing earlier about this yet; noted:"
_PINNED = "Pinned to my notes."
_DERIVED = (_RECALLED, _NOTHING, _PINNED)
_BUILTIN = (*RECALL_TOOLS, NOTES)  # memory tools: recall is used when context lacks an answer
_IDENTIFIER = re.compile(r"\b[A-Z][A-Za-z]*[-_]?[A-Z0-9][\w-]*\b")
_PIN = re.compile(
    r"^(?:please\s+)?(?:remember|pin)\b(?:\s+that)?[\s:,-]+(?P<note>\S.*)",
    re.IGNORECASE | re.DOTALL,
)


def bm25(query: list[str], documents: list[list[str]]) -> list[float]:
    """The BM25 score of each document for the query."""
    if not documents:
        return []
    average = sum(len(d) for d in documents) / len(documents)
    frequency = Counter(term for d in documents for term in set(d))
    weights = {term: idf(len(documents), frequency[term]) for term in set(query)}
    scores = []
    for document in documents:
        counts = Counter(document)
        scores.append(
            sum(
                weight * bm25_term(counts[term], len(document), average)
                for term, weight in weights.items()
                if counts[term]
            )
        )
    return scores


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return json.dumps(content, ensure_ascii=False) if content is not None else ""


def _memories(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Earlier messages as (speaker, text), the preloaded memory split into its messages.

    Requests to call tools, what recall returned and this model's own recollections are left
    out: they repeat what is already there.
    """
    found = []
    recalls = {
        call.get("id")
        for message in messages
        for call in message.get("tool_calls") or []
        if call.get("function", {}).get("name") in RECALL_TOOLS
    }
    for message in messages:
        if message.get("role") == "tool" and message.get("tool_call_id") in recalls:
            continue
        text = _text(message.get("content"))
        remembered = preloaded_messages(text) if message.get("role") == "system" else None
        if message.get("role") == "system" and text.startswith(NOTES_MARKER):
            found += [("note", note) for note in parse_notes(text[len(NOTES_MARKER) :])]
        elif remembered:
            found += [_remembered(m) for m in remembered if not _derived(m["content"])]
        elif text.startswith(_SUMMARY) or (
            message.get("role") != "system" and not message.get("tool_calls") and text.strip()
        ):
            role = message.get("role", "")
            found.append((_SPEAKERS.get(role, role), text.strip()))
    kept = []
    for who, text in found:
        if text.startswith(_SUMMARY):  # a summary is many facts: recall them one by one
            kept += [("summary", s.strip()) for s in _SENTENCE.split(text[len(_SUMMARY) :])]
        elif not text.startswith(_DERIVED):
            kept.append((who, text))
    return [(who, text) for who, text in kept if text]


def _derived(content: Any) -> bool:
    """A request to call tools, or what recall returned: neither is something that was said."""
    return isinstance(content, dict) and bool(
        content.get("tool_calls") or content.get("name") in RECALL_TOOLS
    )


def _remembered(message: dict[str, Any]) -> tuple[str, str]:
    """A preloaded message as (speaker, text); a tool result is reduced to the result itself."""
    content = message["content"]
    if isinstance(content, dict) and isinstance(content.get("content"), str):
        content = content["content"]
    return message["role"], content_text(content).strip()


def summarize(text: str, max_words: int = 300) -> str:
    """An extractive summary: the sentences with the rarest words, numbers and identifiers.

    Speaker labels ("User: ...") and this model's own recollections are left out.
    """
    lines = [_LINE_ROLE.sub("", line, count=1).strip() for line in text.splitlines()]
    facts = [
        line.removeprefix(_NOTHING).strip() for line in lines if not line.startswith(_RECALLED)
    ]
    pieces = _SENTENCE.split("\n".join(facts))
    sentences = list(dict.fromkeys(p.strip() for p in pieces if len(words(p)) >= 2))
    if not sentences:
        return text.strip()[: max_words * 6]
    vocabulary = Counter(w for s in sentences for w in set(words(s)))

    def weight(sentence: str) -> float:
        # Rare words carry facts; words every other sentence repeats carry filler.
        terms = set(words(sentence))
        rarity = sum(idf(len(sentences), vocabulary[t]) for t in terms)
        facts = any(ch.isdigit() for ch in sentence) or _IDENTIFIER.search(sentence)
        return rarity / (1 + len(terms)) ** 0.5 + (2 if facts else 0)

    ranked = sorted(range(len(sentences)), key=lambda i: (-weight(sentences[i]), i))
    chosen, used = [], 0
    for i in ranked:
        size = len(sentences[i].split())
        if used + size > max_words and chosen:
            continue
        chosen.append(i)
        used += size
    return " ".join(sentences[i] for i in sorted(set(chosen)))


def _tool_to_call(task: str, tools: list[dict[str, Any]]) -> dict[str, Any] | None:
    asked = set(words(task))
    if asked & _LOOKUP_ASKS:
        asked |= _LOOKUP_TOOLS
    best, best_score = None, 0
    for tool in tools:
        function = tool.get("function", {})
        described = " ".join(
            [function.get("name", "").replace("_", " "), function.get("description", "")]
            + [
                p.get("description", "")
                for p in function.get("parameters", {}).get("properties", {}).values()
            ]
        )
        score = len(asked & set(words(described)))
        if score > best_score:
            best, best_score = function, score
    return best


def _arguments(task: str, function: dict[str, Any]) -> dict[str, Any]:
    parameters = function.get("parameters", {})
    numbers = re.findall(r"-?\d+(?:\.\d+)?", task)
    arguments: dict[str, Any] = {}
    for name in parameters.get("required", []):
        spec = parameters.get("properties", {}).get(name, {})
        kind = spec.get("type")
        if "enum" in spec:
            arguments[name] = spec["enum"][0]
        elif kind in ("integer", "number"):
            value = float(numbers.pop(0)) if numbers else 1
            arguments[name] = int(value) if kind == "integer" else value
        elif kind == "boolean":
            arguments[name] = True
        elif kind == "array":
            arguments[name] = words(task)
        else:
            arguments[name] = task
    return arguments


def respond(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    max_tokens: int | None = None,
) -> Reply:
    """The offline model's reply to a conversation (see the module docstring).

    A task whose first line asks to summarize, followed by a text, gets a summary of that text
    in about ``max_tokens`` (300 words when not given).
    """
    last = messages[-1] if messages else {"role": "user", "content": ""}
    if last.get("role") == "tool":
        return _answer_from_tools(messages, tools or [])
    task = _text(last.get("content")).strip()
    others = [t for t in tools or [] if t.get("function", {}).get("name") not in _BUILTIN]
    if others and (function := _tool_to_call(task, others)):
        arguments = json.dumps(_arguments(task, function), ensure_ascii=False)
        return Reply("", [ToolCall("call_offline_1", function["name"], arguments)], "tool_calls")
    can_recall = any(t.get("function", {}).get("name") == RECALL for t in tools or [])
    if can_recall and is_question(task) and not _context_answers(task, messages[:-1]):
        calls = [
            ToolCall(
                f"call_offline_recall_{n}", RECALL, json.dumps({"query": q}, ensure_ascii=False)
            )
            for n, q in enumerate(sub_queries(task), 1)
        ]
        return Reply("", calls, "tool_calls")
    can_pin = any(t.get("function", {}).get("name") == NOTES for t in tools or [])
    if can_pin and (pin := _PIN.match(task)):
        arguments = json.dumps({"add": pin["note"].strip()}, ensure_ascii=False)
        return Reply("", [ToolCall("call_offline_pin", NOTES, arguments)], "tool_calls")
    request, _, text = task.partition("\n")
    if request.lower().startswith(("summarize", "summarise")) and text.strip():
        return Reply(
            summarize(text, max(8, int(0.6 * max_tokens)) if max_tokens else 300), [], "stop"
        )
    return Reply(_recall(task, messages[:-1]), [], "stop")


def _answer_from_tools(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply:
    calls = {}
    for message in messages:
        for call in message.get("tool_calls") or []:
            function = call.get("function", {})
            calls[call.get("id")] = (function.get("name", "the tool"), function.get("arguments"))
    results = []
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        name = calls.get(message.get("tool_call_id"), ("the tool", None))[0]
        result = _text(message.get("content")).strip()
        if name == NOTES:
            results.append(_PINNED if saved_notes(result) else result)
        elif name not in RECALL_TOOLS:
            results.append(f"{name} returned: {result}")
    asked = max((k for k, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    recalled: list[tuple[str, str]] = []  # (query, result) of each recall since the task
    followed: dict[tuple[str, int], list[Passage]] = {}  # what was said around a passage
    for message in messages[asked + 1 :]:
        name, arguments = calls.get(message.get("tool_call_id"), ("", None))
        if message.get("role") != "tool" or name not in (RECALL, AROUND_TOOL):
            continue
        given = _json(arguments)
        result = _text(message.get("content")).strip()
        if name == RECALL:
            recalled.append((str(given.get("query", "")), result))
        else:
            followed[(str(given.get("source")), _whole(given.get("message")))] = described(result)
    if recalled:
        can_follow = any(t.get("function", {}).get("name") == AROUND_TOOL for t in tools)
        if can_follow and not followed and (again := _follow_ups(recalled)):
            return Reply("", again, "tool_calls")  # once a task: it never loops
        task = _text(messages[asked].get("content")).strip() if asked >= 0 else ""
        results.append(_answer_from_recall(task, recalled, followed))
    return Reply("\n\n".join(reversed(results)), [], "stop")


def _json(arguments: Any) -> dict[str, Any]:
    """A tool call's arguments as a dict (``{}`` if they are not one)."""
    try:
        given = json.loads(arguments) if isinstance(arguments, str) else arguments
    except json.JSONDecodeError:
        return {}
    return given if isinstance(given, dict) else {}


def _whole(value: Any) -> int:
    """A whole number given, or -1: no message is numbered so."""
    return value if isinstance(value, int) else -1


def _follow_ups(recalled: list[tuple[str, str]]) -> list[ToolCall]:
    """A ``recall_around`` call for each best passage that does not hold what its query asks:
    a question with no answer beside it, or one without all the query's words (said by a
    speaker the query names counts as holding the name)."""
    calls = []
    for query, result in recalled:
        found = described(result)
        if not found or not _lacks(query, found[0]):
            continue
        arguments = {"source": found[0].source, "message": found[0].index + FIRST_NUMBER}
        call = ToolCall(f"call_offline_around_{len(calls) + 1}", AROUND_TOOL, json.dumps(arguments))
        if call.arguments not in {c.arguments for c in calls}:
            calls.append(call)
    return calls


def _lacks(query: str, best: Passage) -> bool:
    """Whether a passage holds less than its query asks (see :func:`_follow_ups`)."""
    said = [best, *best.beside]
    if is_question(best.text) and not best.beside:
        return True
    held = {w for p in said for w in [*words(p.text), *words(p.role)]}
    return not set(words(query)) <= held


def _said_around(query: str, best: Passage, around: list[Passage]) -> list[Passage]:
    """What was said around ``best`` that holds what it lacks: the message that holds most of
    the query's words it does not (the nearest of those that hold as many), or, for a
    question with nothing beside it, the first said after it by someone else."""
    others = [p for p in around if p.index != best.index]
    if is_question(best.text) and not best.beside:
        answer = next((p for p in others if p.index > best.index and p.role != best.role), None)
        return [answer] if answer is not None else []
    held = {w for p in [best, *best.beside] for w in [*words(p.text), *words(p.role)]}
    missing = set(words(query)) - held
    scored = [(len(missing & set(words(p.text))), -abs(p.index - best.index), p) for p in others]
    top = max(scored, key=lambda s: s[:2], default=None)
    return [top[2]] if top is not None and top[0] else []


def _best_memory(task: str, memories: list[tuple[str, str]]) -> int | None:
    """The memory that best matches the task, if any matches at all."""
    asked = set(words(task))
    # A question is no answer, nor is a memory with nothing the task does not already say.
    candidates = [
        i
        for i, (who, text) in enumerate(memories)
        if not set(words(text)) <= asked and not (who == "User" and is_question(text))
    ]
    scores = bm25(list(asked), [words(memories[i][1]) for i in candidates])
    if not scores or max(scores) <= 0:
        return None
    return candidates[max(range(len(scores)), key=lambda k: (scores[k], k))]


def _context_answers(task: str, earlier: list[dict[str, Any]]) -> bool:
    """Whether a message in context says everything the task asks about (else recall can
    search further: it sees the whole memory and every archive, this context included)."""
    memories = _memories(earlier)
    best = _best_memory(task, memories)
    return best is not None and set(words(task)) <= set(words(memories[best][1]))


def _answer_from_recall(
    task: str,
    recalled: list[tuple[str, str]],
    followed: dict[tuple[str, int], list[Passage]],
) -> str:
    """Quote the best passage each recall found (its first, with the question or answer it
    carries, and what was said around it that holds what it lacks), or say that nothing was
    found."""
    found = [(query, passages[0]) for query, result in recalled if (passages := described(result))]
    if not found:
        return f"{_NOTHING} {task}"
    quotes, quoted = [], set()
    for query, best in found:
        around = followed.get((best.source, best.index + FIRST_NUMBER), [])
        for said in sorted([best, *best.beside, *_said_around(query, best, around)], key=_said_at):
            if _said_at(said) in quoted:
                continue
            quoted.add(_said_at(said))
            lines = "\n".join(f"> {line}" for line in said.text.strip().splitlines())
            quotes.append(f"{said.role} said on {said.timestamp}:\n{lines}")
    return f"{_RECALLED}\n\n" + "\n\n".join(quotes)


def _said_at(passage: Passage) -> tuple[str, int]:
    return passage.source, passage.index


def _recall(task: str, earlier: list[dict[str, Any]]) -> str:
    """Quote the earlier message that best matches the task (and the reply to it, if any)."""
    memories = _memories(earlier)
    best = _best_memory(task, memories)
    if best is None:
        return f"{_NOTHING} {task}"
    chosen = [best]
    follows = memories[best + 1][0] if best + 1 < len(memories) else None
    if memories[best][0] == "User" and follows not in (None, "User", "summary"):
        chosen.append(best + 1)  # the reply to what the user said
    quotes = []
    for i in chosen:
        speaker, text = memories[i]
        quoted = "\n".join(f"> {line}" for line in text.splitlines())
        source = "A pinned note says" if speaker == "note" else f"{speaker} said earlier"
        quotes.append(f"{source}:\n{quoted}")
    return f"{_RECALLED}\n\n" + "\n\n".join(quotes)
