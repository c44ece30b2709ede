"""The views' one read path: :class:`~nbmemory.views.read_model.ReadModel` and its text forms.

Every front end (magics, widget, the server's REST API, the CLI, the MCP tools) reads an agent
through the read model, which never writes: ``read_model`` is the model, ``answers`` what it
returns, ``figures`` what it works out from an agent's files, ``pages`` how it pages messages,
``in_ram`` the same answers for a memory kept in RAM only; ``report`` words them for a terminal
or a cell.
"""

from nbmemory.views.read_model import ReadModel

__all__ = ["ReadModel"]
