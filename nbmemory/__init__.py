"""nbmemory: LLM agents in Jupyter whose memory survives restarts, in a file a person can read.

This is the public API. Importing it is cheap: litellm, IPython and the widget libraries are
imported only by the parts that need them, and nothing is written to disk.
"""

from nbmemory import compressor, conversation
from nbmemory.agent import Agent
from nbmemory.compressor import ContextCompressor
from nbmemory.conversation import ChangeEvent, Conversation
from nbmemory.errors import (
    AuthenticationError,
    InvalidAgentNameError,
    MemoryFormatError,
    MemoryWarning,
    MissingKeyError,
    ModelError,
    ModelTimeoutError,
    NbmemoryError,
    ProviderError,
    RateLimitError,
)
from nbmemory.memory.search import MemoryHit
from nbmemory.store import Workspace, list_agents, workspace_dir
from nbmemory.tokens import TokenUsage

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    if name == "MemoryWidget":  # imported on first use: anywidget is a notebook dependency
        from nbmemory.jupyter.widget import MemoryWidget

        return MemoryWidget
    raise AttributeError(f"module 'nbmemory' has no attribute {name!r}")


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """The prebuilt JupyterLab extension (``nbmemory/labextension``), for
    ``jupyter labextension develop``; ``pip install`` puts it in place without asking."""
    return [{"src": "labextension", "dest": "nbmemory"}]


def _jupyter_server_extension_points() -> list[dict[str, object]]:
    """The REST API for the JupyterLab sidebar (see ``nbmemory.jupyter.server``)."""
    from nbmemory.jupyter.server.app import NbMemoryServer

    return [{"module": "nbmemory.jupyter.server.app", "app": NbMemoryServer}]


def load_ipython_extension(ipython: object) -> None:
    """``%load_ext nbmemory``: the ``%%agent``, ``%memory`` and ``%compact`` magics."""
    from nbmemory.jupyter.magics import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: object) -> None:
    """``%unload_ext nbmemory``."""
    from nbmemory.jupyter.magics import unload_ipython_extension as unload

    unload(ipython)


__all__ = [
    "Agent",
    "AuthenticationError",
    "ChangeEvent",
    "ContextCompressor",
    "Conversation",
    "InvalidAgentNameError",
    "MemoryFormatError",
    "MemoryHit",
    "MemoryWarning",
    "MemoryWidget",
    "MissingKeyError",
    "ModelError",
    "ModelTimeoutError",
    "NbmemoryError",
    "ProviderError",
    "RateLimitError",
    "TokenUsage",
    "Workspace",
    "__version__",
    "compressor",
    "conversation",
    "list_agents",
    "workspace_dir",
]
