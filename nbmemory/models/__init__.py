"""The models: calls to any provider through litellm, and nbmemory's offline model.

``llm`` completes, streams and embeds through litellm (imported on first use, kept offline),
with a clear error for a missing key; ``offline`` is the deterministic model that needs no key
or network (``nbmemory/offline``); ``reply`` is what a model's answer holds.
"""
