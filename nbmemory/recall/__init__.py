"""Recall: an agent searching everything it was ever told, its archives included.

Compaction keeps a memory small, but a summary cannot keep every fact. Every raw transcript is
in ``archive/``, so an agent with persistent memory gets a tool to search them: the passages
that best match the query (BM25 over MEMORY.md and every archive, words Snowball-stemmed,
re-ranked by who said it, whether it says when, and which is newer), each with who said it,
when, and where it is kept, and with the message that goes with it (its question or answer, or
what its speaker said next). Each archive is indexed once and its index kept beside the
memory (``kept_indexes``), as is the index of MEMORY.md's messages; in a process, a grown
MEMORY.md is indexed for its new messages only, and what the archives hold taken together (each
word's figures across them, the messages ranked by meaning) is worked out once, until an archive
is added, removed or indexed again. A query's cost is bounded: only its first ``QUERY_TERMS``
distinct words (of its first ``QUERY_CHARS`` characters) count, and only its best matches by
words are re-ranked.

With an agent's embedding model (``embeddings.SemanticIndex``: by default the offline word
vectors of ``word_vectors``), a second ranking by meaning is fused with the ranking by words
(reciprocal rank fusion, weighed by the index's ``weight`` and by how much of the question the
best match by words holds), then passages are made as above; if a provider fails, recall is
by words alone. With none (``"none"``), nothing is embedded.

Recall's own results are written to memory like any tool result; they are never recalled,
nor are requests to call tools, nor an agent's replies that only repeat what it was told
(``speakers.own_words``): what recall returns is only what was said, by whoever said it. A
line that opens with a name ("Maya: I play the cello"), as a transcript fed to an agent does,
is said by that person (``speakers.teller_and_text``).

``recall(folder, query, k)`` takes an agent's documents or its folder on files, and ranks
as the agent's recall tool does unless told otherwise (``DEFAULT_MODEL``).

Recall works in several steps, as an agent does: a passage it found cites its file and
message (numbered from 1), and ``recall_around`` shows what was said around it,
``recall_between`` what was said in a span of time; the same query again gives the next
passages. The recall answers of one run share a budget (``tool.RecallSession``).

The modules, from a message up to the tool:

- ``speakers``: what recall may return of a message, and who said it;
- ``stored_index`` and ``kept_indexes``: an index as bytes, and where (and whether) one is kept;
- ``file_index``: a file's messages indexed in RAM, ``MEMORY.md``'s extended as it grows;
- ``exchanges``: what recall asks of an index, the question beside its answer, who was told;
- ``corpus``: the indexes one recall searches, with the archives' figures worked out once;
- ``days``: the days a question names ("on 21.01.2024");
- ``ranking``: :func:`recall` and :func:`find`, by words, fused with meaning;
- ``embeddings``, ``word_vectors`` and ``piece_vectors``: the ranking by meaning (numpy,
  imported at first use);
- ``follow_up``: the messages said around one recall cited, or in a span of time;
- ``text`` and ``tool``: what recall writes and reads back, and the agent's recall tools.
"""

from nbmemory.recall.kept_indexes import index_size
from nbmemory.recall.ranking import DEFAULT_MODEL, Found, find, recall
from nbmemory.recall.text import (
    DEFAULT_BUDGET,
    DEFAULT_PASSAGES,
    LISTED,
    RECALL_TOOLS,
    TOOL_NAME,
    Passage,
    describe,
)
from nbmemory.recall.tool import PROMPT_LINE, RecallSession, follow_up_tools, recall_tool

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_MODEL",
    "DEFAULT_PASSAGES",
    "LISTED",
    "PROMPT_LINE",
    "RECALL_TOOLS",
    "TOOL_NAME",
    "Found",
    "Passage",
    "RecallSession",
    "describe",
    "find",
    "follow_up_tools",
    "index_size",
    "recall",
    "recall_tool",
]
