"""swarms' ``swarms.agents.context_compressor`` path: the module :mod:`nbmemory.agent.compressor`.

The same module object under a second name, so that code written for swarms that imports or
patches this path (``completion``, ``COMPRESSION_SYSTEM_PROMPT``) acts on the compressor itself.
"""

import sys

from nbmemory.agent import compressor

sys.modules[__name__] = compressor
