"""``MemoryWidget``: a live view of one agent's memory in a notebook (anywidget).

Its modules, from the browser's side to the person's:

- :mod:`.es_module`: the one ES module anywidget sends, ``static/widget.js``, built from the
  TypeScript under ``labextension/src/widget/``;
- :mod:`.traits`: the state the widget and the browser share (the traits, the kernel's one
  model of the widget's words);
- :mod:`.state`: what the read model returns, turned into the traits' JSON;
- :mod:`.following`: the traits kept in step with the agent's memory (a polling thread, the
  agent's hooks, the pages, search, archives, compactions and notes the browser asks for);
- :mod:`.memory_widget`: ``MemoryWidget``, which adds what a person does through it (pin,
  unpin, review, compact, find, read a message whole);
- :mod:`.summary`: the widget as text where no widget front end shows it.
"""

from nbmemory.jupyter.widget.memory_widget import MemoryWidget
from nbmemory.jupyter.widget.traits import PAGE_SIZE

__all__ = ["PAGE_SIZE", "MemoryWidget"]
