"""The JupyterLab server extension: agents' memory over REST, and the MCP endpoint, behind
Jupyter's authentication.

One idea per module: ``app`` (the ``ExtensionApp``, its settings and its routes, the warm-up at
start), ``base_handler`` (what every route shares: the read model in a worker thread, ETags,
errors as JSON), the handlers by what they serve (``read_handlers``: agents, messages, tokens,
archives, compactions, search, find; ``compact_handler``: a compaction and its preview;
``notes_handler``: pinned notes and their review; ``file_handlers``: a memory's path and its
export), ``params`` (checks on what a client sends), ``workers`` (the threads for reads whose
cost grows with a history) and ``mcp_endpoint`` (``nbmemory mcp`` over streamable HTTP).
Jupyter finds the extension through ``nbmemory._jupyter_server_extension_points``, which names
:class:`nbmemory.jupyter.server.app.NbMemoryServer`.
"""
