"""nbmemory: LLM agents in Jupyter whose memory survives restarts, in a file a person can read.

This is the public API. Importing it is cheap: litellm, IPython and the widget libraries are
imported only by the parts that need them, and nothing is written to disk.
"""

from nbmemory.conversation import ChangeEvent, Conversation, TokenUsage
from nbmemory.errors import InvalidAgentNameError, MemoryFormatError, MemoryWarning, NbmemoryError
from nbmemory.search import MemoryHit
from nbmemory.workspace import list_agents, workspace_dir

__version__ = "0.1.0"

__all__ = [
    "ChangeEvent",
    "Conversation",
    "InvalidAgentNameError",
    "MemoryFormatError",
    "MemoryHit",
    "MemoryWarning",
    "NbmemoryError",
    "TokenUsage",
    "__version__",
    "list_agents",
    "workspace_dir",
]
