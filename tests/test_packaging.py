"""The package as users get it: a wheel of this checkout in a clean virtual environment brings
the JupyterLab panel, the server extension and ``jupyter nbmemory``; one version for releases.

Nothing here needs the network: the wheel is built with npm offline (from the cache that
``pip install -e .`` filled), and the clean environment borrows JupyterLab and nbmemory's
dependencies from this one through a path file instead of downloading them. nbmemory itself,
its data files and its commands come from the wheel alone.
"""

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from importlib.metadata import entry_points
from pathlib import Path

import pytest

import nbmemory
from nbmemory import Conversation
from nbmemory.store import memory_path
from support import ROOT

VERSION = nbmemory.__version__
SKIP = shutil.ignore_patterns(
    ".venv", "node_modules", "lib", "labextension", "widget.js", ".git", "*.pyc"
)
BUILT_WIDGET = "nbmemory/jupyter/static/widget.js"  # the widget's module, built like the panel
HERE = Path(sys.executable).parent  # this environment's commands: jupyter, jupyter-builder
DATA = f"nbmemory-{VERSION}.data/data"


def uncoloured(run: subprocess.CompletedProcess) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", run.stdout + run.stderr)


def listed_in(folder: Path, listing: str) -> str:
    """The part of ``jupyter labextension list`` about one folder of extensions."""
    return listing.partition(f"{folder}\n")[2].partition("\n\n")[0]


def source_copy(target: Path) -> Path:
    """This checkout without anything built or installed: what a clone holds."""
    shutil.copytree(ROOT, target, ignore=SKIP)
    shutil.copytree(ROOT / "labextension", target / "labextension", ignore=SKIP)
    return target


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """A wheel built from a copy of this checkout, the panel's and the widget's JavaScript built
    afresh."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = source_copy(tmp / "source")
    assert not (source / "nbmemory" / "labextension").exists()
    assert not (source / BUILT_WIDGET).exists()
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(HERE), os.environ["PATH"]]),
        "npm_config_offline": "true",  # packages from npm's cache, never from the registry
    }
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    build = subprocess.run(
        [*pip_wheel, "--wheel-dir", str(tmp / "dist"), str(source)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    (built,) = (tmp / "dist").glob("nbmemory-*.whl")
    return built


def test_the_wheel_holds_the_license_the_labextension_and_its_install_json(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read(f"nbmemory-{VERSION}.dist-info/METADATA").decode()
        install = json.loads(
            archive.read(f"{DATA}/share/jupyter/labextensions/nbmemory/install.json")
        )
        scripts = archive.read(f"nbmemory-{VERSION}.dist-info/entry_points.txt").decode()
    assert f"nbmemory-{VERSION}.dist-info/licenses/LICENSE" in names
    lab = f"{DATA}/share/jupyter/labextensions/nbmemory"
    assert {f"{lab}/package.json", f"{lab}/static/style.js"} <= names
    assert any(re.fullmatch(rf"{lab}/static/remoteEntry\.\w+\.js", name) for name in names)
    assert f"{DATA}/etc/jupyter/jupyter_server_config.d/nbmemory.json" in names
    assert "nbmemory/recall/word_vectors.bin" in names  # recall's offline vectors
    static = ROOT / "nbmemory" / "jupyter" / "static"  # the built module, CSS, licences
    assert {p.relative_to(ROOT).as_posix() for p in static.rglob("*") if p.is_file()} <= names
    with zipfile.ZipFile(wheel) as archive:
        module = archive.read(BUILT_WIDGET).decode()
    assert module.startswith("/*! nbmemory's widget") and "export" in module
    assert "nbmemory/jupyter/static/marked.LICENSE" in names
    assert install == {
        "packageManager": "python",
        "packageName": "nbmemory",
        "uninstallInstructions": "Use your Python package manager (pip, conda, etc.) to "
        "uninstall the package nbmemory",
    }
    for line in [
        "License-Expression: BSD-3-Clause",
        "License-File: LICENSE",
        "Classifier: Framework :: Jupyter :: JupyterLab :: 4",
        "Classifier: Framework :: Jupyter :: JupyterLab :: Extensions :: Prebuilt",
        "Project-URL: Repository, https://github.com/nbmemory/nbmemory",
        "Project-URL: Changelog, https://github.com/nbmemory/nbmemory/blob/main/CHANGELOG.md",
    ]:
        assert line in metadata.splitlines()
    assert "jupyter-nbmemory = nbmemory.cli:run" in scripts.splitlines()
    assert "[jupyter_server_mcp.tools]" not in scripts  # offered only when a person lists them
    personas = scripts.split("[jupyter_ai.personas]\n", 1)[1].split("\n\n")[0]
    assert personas.splitlines() == ["nbmemory = nbmemory.jupyter.persona:NbMemoryPersona"]
    extra = [r for r in metadata.splitlines() if r.endswith("extra == 'jupyter-ai'")]
    assert [r.split(";")[0] for r in extra] == [
        "Requires-Dist: jupyter-ai<3.3,>=3.2",
        "Requires-Dist: markdown-it-py<5,>=3",  # the persona's chat_markdown
        "Requires-Dist: mcp<2,>=1.24",  # nbmemory[mcp], which `nbmemory mcp` needs
    ]


def test_the_sdist_holds_the_license_the_changelog_and_the_sources(tmp_path):
    """The sdist builds the panel from source (its build hook is what makes the wheel's JS)."""
    source = source_copy(tmp_path / "source")
    hatchling = [sys.executable, "-m", "hatchling", "build", "--target", "sdist", "--no-hooks"]
    subprocess.run(
        [*hatchling, "--directory", str(tmp_path / "dist")],
        cwd=source,
        check=True,
        capture_output=True,
    )
    with tarfile.open(tmp_path / "dist" / f"nbmemory-{VERSION}.tar.gz") as archive:
        names = {name.partition("/")[2] for name in archive.getnames()}
    for name in [
        "LICENSE",
        "CHANGELOG.md",
        "labextension/install.json",
        "labextension/src/index.ts",
        "labextension/src/widget/index.ts",
        "labextension/src/views/markdown.ts",
        "labextension/build-widget.mjs",
        "nbmemory/recall/word_vectors.bin",
    ]:
        assert name in names
    assert not any(name.startswith("nbmemory/labextension/") for name in names)
    assert BUILT_WIDGET not in names  # built from the sources, as the panel is


def clean_venv(path: Path) -> Path:
    """A new virtual environment that sees this one's packages (JupyterLab, litellm, ...) but not
    its nbmemory, with the ``jupyter`` commands the tests run."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", path], check=True, timeout=120)
    python = path / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(site, "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    for script in entry_points(group="console_scripts"):
        if script.name in ("jupyter", "jupyter-labextension", "jupyter-server"):
            main = f"from {script.module} import {script.attr}\nsys.exit({script.attr}())"
            (path / "bin" / script.name).write_text(f"#!{python}\nimport sys\n{main}\n")
            (path / "bin" / script.name).chmod(0o755)
    return path


def test_a_clean_venv_gets_both_extensions_and_jupyter_nbmemory(wheel, tmp_path, workspace):
    Conversation(name="Scout", memory_md_path=memory_path("Scout")).add("User", "hello")
    venv = clean_venv(tmp_path / "venv")
    bin = venv / "bin"
    pip = [sys.executable, "-m", "pip", "--python", bin / "python"]  # this pip, for that venv
    subprocess.run([*pip, "install", "--quiet", "--no-deps", "--no-index", wheel], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "JUPYTER_PATH")}
    env.update(
        PATH=os.pathsep.join([str(bin), os.environ["PATH"]]),  # as if activated
        JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
        JUPYTER_DATA_DIR=str(tmp_path / "data"),
    )

    def run(*args):
        return subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)

    where = run(bin / "python", "-c", "import nbmemory; print(nbmemory.__file__)").stdout
    assert where.startswith(str(venv))  # the wheel's nbmemory, not this checkout's

    labextensions = uncoloured(run(bin / "jupyter", "labextension", "list"))
    installed = listed_in(venv / "share" / "jupyter" / "labextensions", labextensions)
    assert f"nbmemory v{VERSION} enabled OK (python, nbmemory)" in installed
    assert labextensions.count("nbmemory v") == 1
    servers = uncoloured(run(bin / "jupyter", "server", "extension", "list"))
    assert "nbmemory enabled" in servers and f"nbmemory {VERSION} OK" in servers

    widget = "from nbmemory.jupyter.widget import MemoryWidget; print(MemoryWidget._esm[:21])"
    assert run(bin / "python", "-c", widget).stdout == "/*! nbmemory's widget\n"

    listed = run(bin / "jupyter", "nbmemory", "ls")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[1].split()[:2] == ["Scout", "1"]
    assert listed.stdout == run(bin / "nbmemory", "ls").stdout
    found = "from importlib.metadata import entry_points as e; print(e(group='{}'))"
    tools = run(bin / "python", "-c", found.format("jupyter_server_mcp.tools")).stdout
    assert "nbmemory" not in tools  # as jupyter_server_mcp looks: nothing unless configured
    personas = run(bin / "python", "-c", found.format("jupyter_ai.personas")).stdout
    assert "value='nbmemory.jupyter.persona:NbMemoryPersona'" in personas  # as Jupyter AI looks
    settings = run(bin / "jupyter", "nbmemory", "server", "--help-all")
    assert "--NbMemoryServer.poll_interval=<Float>" in settings.stdout


def test_the_extras_install_beside_jupyter_ai_3_2_with_nothing_broken():
    """The test install is ``nbmemory[test]``, which holds ``nbmemory[jupyter-ai]`` and
    ``nbmemory[mcp]``: Jupyter AI 3.2 with its MCP server and the MCP SDK, and pip finds every
    requirement of every package met."""
    from importlib.metadata import version

    assert version("jupyter-ai").startswith("3.2.")
    for package in ("jupyter-server-mcp", "mcp", "jupyter-ai-persona-manager"):
        version(package)  # PackageNotFoundError if the extra did not bring it
    checked = subprocess.run(
        [sys.executable, "-m", "pip", "check"], capture_output=True, text=True, timeout=120
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_jupyter_labextension_develop_links_the_built_extension(tmp_path):
    """What ``_jupyter_labextension_paths`` is for; here into a folder of its own."""
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(HERE), os.environ["PATH"]]),
        "JUPYTER_PATH": str(tmp_path),
    }
    develop = subprocess.run(
        [
            *(HERE / "jupyter", "labextension", "develop", "--overwrite", "."),
            f"--DevelopLabExtensionApp.labextensions_dir={tmp_path / 'labextensions'}",
            "--DevelopLabExtensionApp.sys_prefix=False",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert develop.returncode == 0, develop.stderr
    linked = tmp_path / "labextensions" / "nbmemory"
    assert linked.is_symlink() and linked.resolve() == ROOT / "nbmemory" / "labextension"
    listed = subprocess.run(
        [HERE / "jupyter", "labextension", "list"], capture_output=True, text=True, env=env
    )
    assert f"nbmemory v{VERSION} enabled OK" in listed_in(linked.parent, uncoloured(listed))


def sync_script():
    spec = importlib.util.spec_from_file_location("sync", ROOT / "scripts" / "sync_npm_version.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_version_is_written_once():
    """``nbmemory/__init__.py`` states it; pyproject.toml reads it from there, and npm's copies
    are written from it by ``scripts/sync_npm_version.py``. No other file states it."""
    assert 'dynamic = ["version"]' in (ROOT / "pyproject.toml").read_text()
    package = json.loads((ROOT / "labextension" / "package.json").read_text())
    lock = json.loads((ROOT / "labextension" / "package-lock.json").read_text())
    npm = sync_script().npm_version(VERSION)
    assert package["version"] == lock["version"] == lock["packages"][""]["version"] == npm
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True)
    if files.returncode:
        pytest.skip("not a git checkout")
    stated = re.compile(rf"(?<![\w.]){re.escape(VERSION)}(?![\w.])")
    stating = {
        name
        for name in files.stdout.split("\0")
        if name and stated.search((ROOT / name).read_text(errors="replace"))
    }
    allowed = {"nbmemory/__init__.py", "CHANGELOG.md"}
    allowed |= {"labextension/package.json", "labextension/package-lock.json"}
    assert stating <= allowed


def test_a_version_bump_reaches_npm_through_the_sync_script(tmp_path):
    for name in [
        "nbmemory/__init__.py",
        "labextension/package.json",
        "labextension/package-lock.json",
    ]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    sync = [sys.executable, ROOT / "scripts" / "sync_npm_version.py", tmp_path]

    subprocess.run(sync, check=True, capture_output=True)  # in step already: nothing changes
    for name in ["labextension/package.json", "labextension/package-lock.json"]:
        assert (tmp_path / name).read_bytes() == (ROOT / name).read_bytes()

    init = tmp_path / "nbmemory" / "__init__.py"  # what `hatch version 0.2.0rc1` does
    init.write_text(init.read_text().replace(f'"{VERSION}"', '"0.2.0rc1"'))
    assert subprocess.run(sync, check=True, capture_output=True, text=True).stdout == (
        "labextension version: 0.2.0-rc.1\n"
    )
    package = json.loads((tmp_path / "labextension" / "package.json").read_text())
    lock = json.loads((tmp_path / "labextension" / "package-lock.json").read_text())
    assert package["version"] == lock["version"] == lock["packages"][""]["version"] == "0.2.0-rc.1"


def test_npm_spells_prereleases_as_jupyterlab_does():
    npm_version = sync_script().npm_version
    assert npm_version("1.2.3") == "1.2.3"
    assert npm_version("0.2.0a1") == "0.2.0-alpha.1"
    assert npm_version("0.2.0b0") == "0.2.0-beta.0"
    assert npm_version("0.2.0.dev3") == "0.2.0-dev.3"
    with pytest.raises(ValueError, match="no npm spelling"):
        npm_version("1.0.post1")


def test_the_changelog_has_an_entry_for_this_version():
    """Between jupyter-releaser's markers: it reads the current version there."""
    changelog = (ROOT / "CHANGELOG.md").read_text()
    start, end = "<!-- <START NEW CHANGELOG ENTRY> -->", "<!-- <END NEW CHANGELOG ENTRY> -->"
    assert changelog.count(start) == changelog.count(end) == 1
    current = changelog.split(start)[1].split(end)[0]
    assert current.strip().startswith(f"## {VERSION}\n")
