"""The layers of ARCHITECTURE.md, checked on the import graph of the package's source."""

from __future__ import annotations

import ast
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from support import ROOT

PACKAGE = ROOT / "nbmemory"
LAYERS = {
    "base": ["errors", "tokens", "terms", "wording"],
    "storage": ["store"],
    "memory": ["memory", "conversation"],
    "models and recall": ["models", "recall"],
    "agent": ["agent", "compressor"],
    "views": ["views"],
    "front ends": ["cli", "__main__", "mcp_server", "jupyter"],
}
SWARMS_PATHS = {"nbmemory.conversation": "memory", "nbmemory.compressor": "agent"}
"""The two modules swarms code imports by name, each the same module as one inside a package."""
RANK = {module: rank for rank, modules in enumerate(LAYERS.values()) for module in modules}
JUPYTER_ONLY = ("IPython", "anywidget", "ipywidgets", "tornado", "jupyter_server", "mistune")
MCP_ONLY = ("mcp",)
"""The MCP SDK (``nbmemory[mcp]``): the MCP front ends alone import it."""
MCP_FRONT_ENDS = (
    "nbmemory.mcp_server",
    "nbmemory.jupyter.server.mcp_endpoint",
    "nbmemory.jupyter.mcp_tools",
)
"""Any other module imports these inside a function, so nbmemory, its CLI and its Jupyter
extension work without the SDK."""
JUPYTER_AI_ONLY = ("jupyter_ai", "jupyter_ai_persona_manager", "jupyterlab_chat")
"""Jupyter AI (``nbmemory[jupyter-ai]``): its persona alone imports it."""
PERSONA = "nbmemory.jupyter.persona"
FILE_READERS = (
    "nbmemory.store.memory_format",
    "nbmemory.store.memory_file",
    "nbmemory.store.follow",
    "nbmemory.memory.search",
    "nbmemory.tokens",
)
"""What a view must not use: it reads through the read model instead."""


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def is_module(name: str) -> bool:
    """Whether a dotted name is a module (or package) of nbmemory's source."""
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imports(path: Path) -> list[tuple[str, bool]]:
    """(module imported, whether the import is inside a function) for every import in a file."""
    tree = ast.parse(path.read_text())
    found = []

    def visit(node: ast.AST, nested: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = nested or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.Import):
                found.extend((alias.name, nested) for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and child.module and not child.level:
                names = [f"{child.module}.{alias.name}" for alias in child.names]
                # ``from nbmemory.recall import text`` imports the module, not the package's names.
                package = [] if all(map(is_module, names)) else [child.module]
                found.extend((name, nested) for name in [*package, *names])
            visit(child, inner)

    visit(tree, False)
    return found


def layer_of(module: str) -> str:
    """``nbmemory.jupyter.widget`` -> ``jupyter``; ``nbmemory.errors`` -> ``errors``."""
    return module.split(".")[1] if module.count(".") else module


def internal(module: str, known: dict[str, Path]) -> str | None:
    """The nbmemory module an import names (``nbmemory.errors.X`` -> ``nbmemory.errors``)."""
    while module and module not in known:
        module = module.rpartition(".")[0]
    return module or None


def test_every_module_has_a_layer():
    unplaced = {layer_of(m) for m in modules() if m != "nbmemory"} - set(RANK)
    assert not unplaced, f"add these to LAYERS in this test (and to ARCHITECTURE.md): {unplaced}"


def test_imports_point_down_the_layers():
    known = modules()
    upward = []
    for module, path in known.items():
        if module == "nbmemory":  # the public API gathers every layer
            continue
        for name, _ in imports(path):
            target = internal(name, known)
            if target in (None, "nbmemory") or target == module:
                continue
            if RANK[layer_of(target)] > RANK[layer_of(module)]:
                upward.append(f"{module} imports {target}")
    assert not upward


def test_no_import_cycles_between_modules():
    known = modules()
    graph = {
        module: {internal(name, known) for name, _ in imports(path)} - {None, "nbmemory", module}
        for module, path in known.items()
        if module != "nbmemory"
    }
    cycles = []

    def walk(node: str, trail: list[str]) -> None:
        for nxt in graph.get(node, ()):
            if nxt in trail:
                cycles.append(" -> ".join([*trail[trail.index(nxt) :], nxt]))
            elif len(trail) < 12:
                walk(nxt, [*trail, nxt])

    for module in graph:
        walk(module, [module])
    assert not cycles


def test_optional_libraries_stay_in_their_corner():
    misplaced = []
    for module, path in modules().items():
        for name, nested in imports(path):
            root = name.split(".")[0]
            if root in JUPYTER_ONLY and not module.startswith("nbmemory.jupyter"):
                misplaced.append(f"{module} imports {name}")
            if root in MCP_ONLY and module not in MCP_FRONT_ENDS:
                misplaced.append(f"{module} imports {name}")
            if root in JUPYTER_AI_ONLY and module != PERSONA:
                misplaced.append(f"{module} imports {name}")
            if name.startswith(PERSONA) and module != PERSONA:
                misplaced.append(f"{module} imports the persona (Jupyter AI loads it)")
            mcp_module = name.startswith(MCP_FRONT_ENDS)
            if mcp_module and module not in MCP_FRONT_ENDS and not nested:
                misplaced.append(f"{module} imports {name} at import time")
            if root == "litellm" and (module != "nbmemory.models.llm" or not nested):
                misplaced.append(f"{module} imports litellm{'' if nested else ' at import time'}")
    assert not misplaced


def test_views_read_through_the_read_model():
    known = modules()
    readers = []
    for module, path in known.items():
        if RANK.get(layer_of(module)) != RANK["cli"]:
            continue
        for name, _ in imports(path):
            target = internal(name, known)
            if target in FILE_READERS:
                readers.append(f"{module} imports {target}")
    assert not readers


ENVIRONMENT = {
    "nbmemory.store.workspace": {"Workspace.from_env"},
    "nbmemory.models.llm": {
        "default_model",
        "default_embedding_model",
        "litellm",
        "_keep_litellm_offline",
    },
    "nbmemory.tokens": {"_tiktoken_cache"},
}
"""Where code below the front ends may touch ``os.environ``: the workspace the environment
names, and, for the model layer, ``$NBMEMORY_MODEL``, ``$NBMEMORY_EMBEDDING_MODEL`` and the
switches that keep litellm and tiktoken offline."""
ROUTERS = {"Workspace.from_env", "docs_at", "as_workspace"}
"""The calls that decide a store from a path or from the environment."""


def scopes(path: Path) -> Iterator[tuple[str, ast.AST]]:
    """Every node of a file with the dotted name of the function or class around it."""

    def walk(node: ast.AST, scope: str) -> Iterator[tuple[str, ast.AST]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                yield from walk(child, f"{scope}.{child.name}".lstrip("."))
            else:
                yield scope, child
                yield from walk(child, scope)

    yield from walk(ast.parse(path.read_text(encoding="utf-8")), "")


def called(node: ast.AST) -> str | None:
    """``Workspace.from_env`` for ``Workspace.from_env(...)``, ``docs_at`` for ``docs_at(...)``."""
    if not isinstance(node, ast.Call):
        return None
    if isinstance(node.func, ast.Name):
        return node.func.id
    if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
        return f"{node.func.value.id}.{node.func.attr}"
    return None


def test_below_the_front_ends_only_from_env_reads_the_environment():
    found = []
    for module, path in modules().items():
        if module == "nbmemory" or layer_of(module) in LAYERS["front ends"]:
            continue
        for scope, node in scopes(path):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "os"
                and node.attr in ("environ", "getenv", "putenv", "unsetenv")
                and scope not in ENVIRONMENT.get(module, ())
            ):
                found.append(f"{module}: {scope or 'module level'} uses os.{node.attr}")
    assert not found


def test_a_store_is_chosen_when_an_object_is_built_never_per_document_call():
    """Below the front ends, a path or the environment is turned into a store only by
    constructors and by the store module's helpers for callers that name no workspace."""
    helpers = {
        "list_agents",
        "agent_dir",
        "memory_path",
        "workspace_dir",
        "docs_at",
        "as_workspace",
    }
    found = []
    for module, path in modules().items():
        if module == "nbmemory" or layer_of(module) in LAYERS["front ends"]:
            continue
        for scope, node in scopes(path):
            name = called(node)
            if name not in ROUTERS:
                continue
            constructor = scope.endswith("__init__") or scope.endswith(".workspace")
            if module == "nbmemory.store.workspace" and scope in helpers:
                continue
            if not constructor and not scope.endswith(".memory_md_path"):
                found.append(f"{module}: {scope} calls {name}")
    assert not found


def test_the_store_keeps_no_choice_in_the_environment():
    for path in (PACKAGE / "store").glob("*.py"):
        source = path.read_text(encoding="utf-8")
        assert "os.environ[" not in source and "setenv" not in source, path.name
    from nbmemory import store
    from nbmemory.store import workspace

    for module in (store, workspace):
        for gone in ("use", "database", "locate", "locate_folder", "read", "write", "describe"):
            assert not hasattr(module, gone), (
                f"{module.__name__}.{gone} routes by path or keeps global state"
            )


def test_the_architecture_page_names_every_layer_and_package():
    page = (ROOT / "ARCHITECTURE.md").read_text()
    packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    missing = [name for name in [*LAYERS, *(f"{p}/" for p in packages)] if name not in page]
    assert not missing, f"ARCHITECTURE.md does not say where these are: {missing}"


def test_nothing_in_the_repository_cites_a_file_outside_it():
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode:
        pytest.skip("not a git checkout")
    outside = re.compile(r"\.\./shared|/wor[k]/|DESIGN\.md")  # [k]: not a citation itself
    citing = [
        name
        for name in listed.stdout.split("\0")
        if name
        and (ROOT / name).is_file()
        and outside.search((ROOT / name).read_text(errors="replace"))
    ]
    assert not citing


def test_the_swarms_paths_are_the_modules_inside_the_packages():
    import importlib

    for public, package in SWARMS_PATHS.items():
        inside = f"nbmemory.{package}.{public.rpartition('.')[2]}"
        assert importlib.import_module(public) is importlib.import_module(inside)


def test_inside_the_package_only_the_public_api_imports_the_swarms_paths():
    known = modules()
    found = [
        f"{module} imports {name}"
        for module, path in known.items()
        if module not in ("nbmemory", *SWARMS_PATHS)
        for name, _ in imports(path)
        if internal(name, known) in SWARMS_PATHS
    ]
    assert not found


MOST_LINES = 800
"""A module longer than this holds more than one idea: split it where the ideas part."""


def test_no_module_is_longer_than_most_lines():
    long = {}
    for module, path in modules().items():
        lines = path.read_text(encoding="utf-8").count("\n")
        if lines > MOST_LINES:
            long[module] = lines
    assert not long
