"""The views' one read path: :class:`~nbmemory.views.read_model.ReadModel` and its text forms.

Every front end (magics, widget, the server's REST API, the CLI, the MCP tools) reads an agent
through the read model, which never writes; ``report`` words what it returns for a terminal or a
cell.
"""

from nbmemory.views.read_model import ReadModel

__all__ = ["ReadModel"]
