"""The agent layer: :class:`Agent`, its tools, the context compressor and the offline model.

``agent`` runs a model over a conversation with pinned notes and recall; ``compressor`` is the
``ContextCompressor`` that compacts a memory nearing its window; ``request_parts`` counts a
request's parts for it and for every gauge; ``tools`` turns the person's Python functions into
tool schemas; ``offline`` is the built-in model that needs no key;
``demo`` seeds the example agents of the notebooks.
"""

from nbmemory.agent.agent import Agent

__all__ = ["Agent"]
