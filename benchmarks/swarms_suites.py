"""Run swarms' own Conversation and compressor tests on swarms 16.0.3 and on nbmemory.

Usage: ``python benchmarks/swarms_suites.py SWARMS_CHECKOUT [--swarms-version 16.0.3]``

SWARMS_CHECKOUT is a clone of github.com/kyegomez/swarms (only its ``tests/`` are read). Two
throwaway venvs are made in a temporary folder: one with swarms from the package index, one with
this checkout of nbmemory, where ``swarms.structs.conversation`` and
``swarms.agents.context_compressor`` are the nbmemory modules themselves (nothing else changes).
A test that returns ``False`` (swarms' tests report failure that way) counts as failed. Prints
one row per test that fails on either side, then the totals. Needs the package index; never run
by the test suite.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SUITES = ("tests/structs/test_conversation.py", "tests/agents/test_context_compressor.py")
ROOT = Path(__file__).resolve().parent.parent

STRICT_RETURNS = """
import pytest

@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    names = pyfuncitem._fixtureinfo.argnames
    result = pyfuncitem.obj(**{name: pyfuncitem.funcargs[name] for name in names})
    assert result is not False, "the test returned False"
    return True
"""

ALIAS = "import sys\nimport {target}\nsys.modules[__name__] = {target}\n"


def venv(folder: Path, *packages: str) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
    python = folder / "bin" / "python"
    subprocess.run([python, "-m", "pip", "install", "-q", *packages], check=True)
    return python


def shim(folder: Path) -> Path:
    """A ``swarms`` package whose memory modules are nbmemory's."""
    package = folder / "swarms"
    for sub, module, target in (
        ("structs", "conversation", "nbmemory.conversation"),
        ("agents", "context_compressor", "nbmemory.compressor"),
    ):
        (package / sub).mkdir(parents=True)
        (package / sub / "__init__.py").write_text("")
        (package / sub / f"{module}.py").write_text(ALIAS.format(target=target))
    (package / "__init__.py").write_text("from nbmemory import Agent, Conversation\n")
    return folder


def outcomes(python: Path, tests: Path, path: str | None = None) -> dict[str, bool]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tests)}
    if path:
        env["PYTHONPATH"] = path
    run = subprocess.run(
        [
            python,
            "-m",
            "pytest",
            "-q",
            "-rA",
            "-p",
            "no:cacheprovider",
            *map(str, tests.glob("*.py")),
        ],
        cwd=tests,
        env=env,
        capture_output=True,
        text=True,
    )
    found = re.findall(r"^(PASSED|FAILED|ERROR) (\S+)", run.stdout, re.MULTILINE)
    return {name.split("/")[-1]: status == "PASSED" for status, name in found}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", type=Path)
    parser.add_argument("--swarms-version", default="16.0.3")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        tests = work / "tests"
        tests.mkdir()
        for suite in SUITES:
            shutil.copy(args.checkout / suite, tests)
        (tests / "conftest.py").write_text(STRICT_RETURNS)
        swarms = venv(work / "swarms", f"swarms=={args.swarms_version}", "pytest")
        ours = venv(work / "nbmemory", str(ROOT), "pytest", "loguru")
        theirs = outcomes(swarms, tests)
        mine = outcomes(ours, tests, str(shim(work / "shim")))
    print(f"| test | swarms {args.swarms_version} | nbmemory |")
    print("|---|---|---|")
    for name in sorted(set(theirs) | set(mine)):
        if not (theirs.get(name) and mine.get(name)):
            marks = ["pass" if side.get(name) else "FAIL" for side in (theirs, mine)]
            print(f"| {name} | {marks[0]} | {marks[1]} |")
    for label, side in ((f"swarms {args.swarms_version}", theirs), ("nbmemory", mine)):
        print(f"{label}: {sum(side.values())} passed, {len(side) - sum(side.values())} failed")
    regressions = sorted(n for n in theirs if theirs[n] and not mine.get(n))
    print(f"passed by swarms, failed by nbmemory: {len(regressions)}")


if __name__ == "__main__":
    main()
