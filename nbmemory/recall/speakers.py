"""Who said a message, and what of it recall may return.

What recall returns is only what was said, by whoever said it: recall's own results, requests
to call tools and compaction summaries are never returned (``recallable``); an agent's reply
counts for what it says of its own, not for what it quotes or repeats of the message it
answers (``own_words``, ``answered_text``); and a line that opens with a name ("Maya: I play
the cello", as a transcript fed to an agent does) is that person's (``teller_and_text``): the
name says who, not what. ``speaker_words`` are the words a speaker's name is searched as, and
``spelled_like`` finds the speaker a name spelled another way means ("Mohammed", "Muhhamed").
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Collection
from typing import Any

from nbmemory.memory.preload import SUMMARY_MARKER
from nbmemory.memory.search import content_text
from nbmemory.recall.text import RECALL_TOOLS
from nbmemory.terms import words


def recallable(message: dict[str, Any]) -> str | None:
    """The text recall may return for a message, or ``None`` for recall's own results, for
    requests to call tools, and for compaction summaries (what they keep was said in a message
    the archives hold, with who said it and when). A question is kept: "Did you know I moved
    to Lyon?" tells, and an answer is found through the question it answers."""
    content = message.get("content")
    if isinstance(content, dict):
        if content.get("tool_calls") or content.get("name") in RECALL_TOOLS:
            return None
        if isinstance(content.get("content"), str):
            content = content["content"]
    text = content_text(content)
    return text if text.strip() and not text.startswith(SUMMARY_MARKER) else None


_QUOTED = re.compile(r"^[ \t]*>.*\n?", re.MULTILINE)
_INTRODUCES = re.compile(r"^.*:[ \t]*$\n?", re.MULTILINE)
_ECHOED = 20
"""Characters a message must have for a reply that repeats it whole to count as an echo."""


_LABEL = re.compile(
    r"(?:[\[(][^\])\n]{1,60}[\])][ \t]*)?"
    r"([A-Z][\w'.-]*(?: [A-Z][\w'.-]*){0,2}|[a-z][a-z'-]{2,19}): (?=\S)"
)
_HEADINGS = frozenset(
    "note notes update reminder summary answer question decision todo warning error edit ps fyi "
    "re fwd subject important example task step result output input context tip hint source "
    "agenda action actions status next done plan goal idea issue problem fix solution".split()
)
"""Words of a line's opening that make it a heading ("Note: ...", "Action Items: ..."), not a
speaker's name."""


def own_words(text: str, answered: str | None) -> str:
    """What an agent's reply says of its own: without the lines it quotes ("> ...") and without
    the message it answers if it repeats it whole. Those are another message's words, which
    recall finds with who said them and when; a reply that only repeats them ("Noted: ...",
    "You said earlier: > ...") is not recalled: ``""``. The lines that introduce what it repeats
    (ending with ":") go with it."""
    own = text
    if answered is not None and len(answered) >= _ECHOED:
        own = own.replace(answered, "")
    own = _QUOTED.sub("", own)
    if own != text:
        own = _INTRODUCES.sub("", own)
    return own.strip()


def answered_text(messages: list[dict[str, Any]], k: int, agent: str) -> str | None:
    """The text of the message the agent's reply ``k`` answers: the last one before it that
    someone else said, past the tool calls and results between them (``BETWEEN`` at most)."""
    for message in reversed(messages[max(0, k - 1 - BETWEEN) : k]):
        text = recallable(message)
        if text is not None and str(message.get("role", "")) != agent:
            return text
    return None


def teller_and_text(role: str, text: str | None) -> tuple[str, str | None]:
    """Who says a message, and what they say: the name it opens with and the rest, as a line
    of a transcript ("Maya: I play the cello", up to three capitalized words or one word in
    lower case, as chat exports write some names: "elise: ...", perhaps after a time in
    brackets: "[8 May 2023] Maya: ..."); else its role and its text. The name is its
    speaker's, as a role is, not a word said."""
    found = _LABEL.match(text) if text else None
    if found is None or text is None or _HEADINGS.intersection(found[1].lower().split()):
        return role, text
    return found[1], text[: found.start(1)] + text[found.end() :]


@functools.cache
def speaker_words(role: str) -> frozenset[str]:
    """The words of a speaker's role ("User", a person's or agent's name)."""
    return frozenset(words(role))


SPELLING = 0.7
"""How alike (``difflib``'s ratio of two names' letters, 1 when the same) a name must be
spelled to a speaker's to be taken for it: "Aqib" and "Akib" are 0.75 alike, "Mohammed" and
"Muhhamed" (as stemmed) 0.73, "Kevin" and "Karen" 0.6."""


def spelled_like(name: str, speakers: Collection[str]) -> str | None:
    """The one of ``speakers`` (their ``speaker_words``) that ``name`` (a stemmed word) is
    another spelling of, as people spell names differently: the one spelled most alike, if it
    starts with the same letter and is alike enough (``SPELLING``); ``None`` if none is, or
    if two are equally alike."""
    alike = sorted(
        (
            (difflib.SequenceMatcher(None, name, speaker).ratio(), speaker)
            for speaker in speakers
            if speaker[:1] == name[:1] and speaker != name
        ),
        reverse=True,
    )
    if not alike or alike[0][0] < SPELLING or (len(alike) > 1 and alike[1][0] == alike[0][0]):
        return None
    return alike[0][1]


BETWEEN = 6
"""Messages recall never returns that may stand between a question and its answer."""
