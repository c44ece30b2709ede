"""``nbmemory/offline``: a small deterministic model that runs with no key and no network.

It does real work with its context, so demos and tests show memory reaching the model:
it answers by quoting the earlier messages or pinned notes most relevant to the task (BM25),
calls a tool when the task asks for what the tool offers and then answers from the tool's
result, recalls when its context lacks the answer (a two-part question one part at a time),
pins what it is asked to remember
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
from nbmemory.recall.text import TOOL_NAME as RECALL
from nbmemory.recall.text import described, sub_queries
from nbmemory.terms import bm25_term, idf, is_question, words

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
_BUILTIN = (RECALL, NOTES)  # memory tools: recall is used when context lacks an answer
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
        if call.get("function", {}).get("name") == RECALL
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
        content.get("tool_calls") or content.get("name") == RECALL
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
        return _answer_from_tools(messages)
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


def _answer_from_tools(messages: list[dict[str, Any]]) -> Reply:
    names = {}
    for message in messages:
        for call in message.get("tool_calls") or []:
            names[call.get("id")] = call.get("function", {}).get("name", "the tool")
    results, recalled = [], []
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        name = names.get(message.get("tool_call_id"), "the tool")
        result = _text(message.get("content")).strip()
        if name == RECALL:
            recalled.insert(0, result)
        elif name == NOTES:
            results.append(_PINNED if saved_notes(result) else result)
        else:
            results.append(f"{name} returned: {result}")
    if recalled:
        task = next((m for m in reversed(messages) if m.get("role") == "user"), {})
        results.append(_answer_from_recall(_text(task.get("content")).strip(), recalled))
    return Reply("\n\n".join(reversed(results)), [], "stop")


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


def _answer_from_recall(task: str, results: list[str]) -> str:
    """Quote the best passage each recall found (its first, with the question or answer it
    carries), or say that nothing was found."""
    found = [passages[0] for passages in map(described, results) if passages]
    if not found:
        return f"{_NOTHING} {task}"
    quotes = []
    for best in dict.fromkeys(found):
        for said in sorted([best, *best.beside], key=lambda p: p.index):
            quoted = "\n".join(f"> {line}" for line in said.text.strip().splitlines())
            quotes.append(f"{said.role} said on {said.timestamp}:\n{quoted}")
    return f"{_RECALLED}\n\n" + "\n\n".join(quotes)


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
