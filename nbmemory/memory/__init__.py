"""The memory layer: a conversation written through to MEMORY.md, and the records beside it.

``conversation`` is :class:`~nbmemory.memory.conversation.Conversation` (with swarms' methods
from ``swarms_conversation``); ``messages`` checks what it takes as a message; ``preload`` is
the text a resumed memory is sent to the model as; ``search`` finds text in a history;
``token_counts`` keeps each block's tokens so that a new process need not count them again,
and ``block_counts`` is a conversation's own count of them; ``notes`` and ``note_history``
are the pinned notes and every change made to them; ``provenance`` says which notebook cell and
run each message came from; ``compactions`` lists what each compaction archived; ``run_settings``
keeps the model and window an agent last ran with; ``export`` writes a memory's messages as a
document. Nothing here knows about models or agents.
"""
