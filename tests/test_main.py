import os
import subprocess
import sys

from nbmemory import Workspace
from support import ROOT


def run_demo(workspace):
    env = {k: v for k, v in os.environ.items() if k != "NBMEMORY_MODEL"}
    return subprocess.run(
        [sys.executable, "-m", "nbmemory", "demo", "--workspace", str(workspace)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env=env,
    ).stdout


def test_the_demo_writes_reloads_compacts_and_asks_an_agent(tmp_path):
    first = run_demo(tmp_path)
    assert "1. Started with 0 remembered messages." in first
    assert "2. A fresh Conversation preloads 4 messages:" in first
    assert "search_memory('clickhouse') finds 2 messages." in first
    assert "Archives so far: 1" in first
    assert "4. An agent on nbmemory/offline, started afresh, is asked: Which warehouse" in first
    assert "The analytics warehouse is ClickHouse" in first.split("4. An agent")[1]
    docs = Workspace.from_env(tmp_path).agent("demo-agent")
    [archive] = [docs.read(path).decode() for path in docs.archives()]
    assert "Our team picked ClickHouse" in archive  # the transcript the summary replaced


def test_a_second_demo_run_resumes_where_the_first_ended(tmp_path):
    run_demo(tmp_path)
    second = run_demo(tmp_path)
    assert "1. Started with 5 remembered messages." in second  # summary, then a recall
    assert "Archives so far: 2" in second


def test_an_unknown_command_is_a_usage_error():
    result = subprocess.run(
        [sys.executable, "-m", "nbmemory", "frobnicate"], capture_output=True, text=True, cwd=ROOT
    )
    assert result.returncode == 2
    assert "invalid choice: 'frobnicate'" in result.stderr
