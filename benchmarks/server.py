"""Measure the server extension under a polling sidebar and print a table.

    python benchmarks/server.py [--runs N] [--seconds S]

It builds a workspace with a 10,000-message agent, starts its own ``jupyter server`` on
127.0.0.1 with the extension on, and measures:

- the event loop's delay, as the latency of ``GET /api/status`` (a handler that does no work),
  while a client polls ``/nbmemory/api/agents`` and the selected agent's page every 0.5 s with
  ``If-None-Match`` (as the sidebar does) and another process keeps appending to that agent;
  the same with nothing else going on, for comparison;
- a poll when nothing changed: the server's own time (its ``Server-Timing`` header) and the
  bytes on the wire (status line, headers and body) of each of the panel's two requests;
- big content: the event loop's delay while another process writes a 10 MiB message, the
  panel reads the agent list and the page that holds it, and a client compacts with a 20 MiB
  summary; and the bytes of that page.

Each figure is the median over ``--runs`` runs. The server is stopped at the end.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager, suppress
from pathlib import Path

HERE = Path(__file__).parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

MESSAGES = 10_000
AGENT = "Big"
POLL_SECONDS = 0.5
APPEND_SECONDS = 0.2
PAGE = f"/nbmemory/api/agents/{AGENT}?offset=0&limit=20&newest_first=1"
AGENTS = "/nbmemory/api/agents"

GOALS = {
    "event loop delay, p50 (ms)": "",
    "event loop delay, p95 (ms)": "<= 20",
    "unchanged poll: server time, agents (ms)": "<= 5",
    "unchanged poll: server time, page (ms)": "<= 5",
    "unchanged poll: bytes, agents + page": "<= 2048",
    "big content: event loop delay, max (ms)": "<= 250",
}

APPENDER = """
import sys, time
from nbmemory import Conversation
from nbmemory.store import memory_path
convo = Conversation(name=sys.argv[1], memory_md_path=memory_path(sys.argv[1]))
print("ready", flush=True)
i = 0
while True:
    i += 1
    convo.add("User" if i % 2 else sys.argv[1], f"appended note {i} about the quarterly budget")
    time.sleep(float(sys.argv[2]))
"""


def build_workspace(root: Path) -> None:
    """One agent with ``MESSAGES`` messages of a few sentences each."""
    os.environ["WORKSPACE_DIR"] = str(root)
    from nbmemory import Conversation
    from nbmemory.store import memory_path

    convo = Conversation(name=AGENT, memory_md_path=memory_path(AGENT))
    for i in range(MESSAGES):
        role = "User" if i % 2 else AGENT
        convo.add(role, f"Message {i}: the budget review moved to week {i % 52}. " * 3)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def jupyter_server(root: Path, workspace: Path, *options: str):
    """A ``jupyter server`` on 127.0.0.1 with nbmemory's extension and ``options``; yields
    (port, token)."""
    with tempfile.TemporaryDirectory(prefix="nbmemory-bench-") as tmp:
        state = Path(tmp)
        config = state / "nbmemory.json"
        config.write_text(json.dumps({"ServerApp": {"jpserver_extensions": {"nbmemory": True}}}))
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
            "JUPYTER_CONFIG_DIR": str(state / "config"),
            "JUPYTER_RUNTIME_DIR": str(state / "runtime"),
            "WORKSPACE_DIR": str(workspace),
        }
        token, port = secrets.token_hex(16), free_port()
        command = [
            *(sys.executable, "-m", "jupyter_server", "--allow-root", "--no-browser"),
            *("--ip", "127.0.0.1", "--port", str(port), "--ServerApp.port_retries=0"),
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}",
            f"--config={config}",
            f"--NbMemoryServer.poll_interval={POLL_SECONDS}",
            *options,
        ]
        log = (state / "server.log").open("wb")
        process = subprocess.Popen(
            command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            deadline = time.monotonic() + 60
            while True:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError((state / "server.log").read_text()[-3000:])
                with suppress(OSError):
                    status, _, _ = get(port, token, "/api/status")
                    if status == 200:
                        break
                time.sleep(0.2)
            yield port, token
        finally:
            if process.poll() is None:
                process.terminate()
                with suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=15)
            with suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=15)
            log.close()


def get(port, token, path, etag=None, connection=None):
    """(status, headers, body) of one GET; reuses ``connection`` if given."""
    conn = connection or http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Authorization": f"token {token}"}
    if etag:
        headers["If-None-Match"] = etag
    conn.request("GET", path, headers=headers)
    response = conn.getresponse()
    body = response.read()
    if connection is None:
        conn.close()
    return response.status, response.headers, body


def wire_bytes(port, token, path, etag):
    """Bytes the server sends for one GET (status line, headers, body), read off the socket."""
    request = (
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: token {token}\r\n"
        f"If-None-Match: {etag}\r\nConnection: close\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return data


class Poller(threading.Thread):
    """The sidebar: every 0.5 s, the agent list and the selected agent's page, If-None-Match."""

    def __init__(self, port, token):
        super().__init__(daemon=True)
        self.port, self.token = port, token
        self.stop = threading.Event()
        self.polls = self.changed = 0

    def run(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        etags: dict[str, str] = {}
        while not self.stop.wait(POLL_SECONDS):
            for path in (AGENTS, PAGE):
                status, headers, _ = get(self.port, self.token, path, etags.get(path), conn)
                etags[path] = headers.get("ETag", "")
                self.changed += status == 200
            self.polls += 1
        conn.close()


def status_latencies(port, token, seconds: float) -> list[float]:
    """Latency (ms) of ``GET /api/status`` every 20 ms for ``seconds``."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    times = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        start = time.perf_counter()
        status, _, _ = get(port, token, "/api/status", connection=conn)
        times.append((time.perf_counter() - start) * 1000)
        assert status == 200
        time.sleep(0.02)
    conn.close()
    return times


def post(port, token, path, body: dict) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request("POST", path, body=json.dumps(body), headers={"Authorization": f"token {token}"})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, data


HUGE = "Huge"
HUGE_WRITER = """
import sys
from nbmemory import Conversation
from nbmemory.store import memory_path
text = "The appendix lists every invoice of the year in full detail. " * (10 * 2**20 // 62)
Conversation(name=sys.argv[1], memory_md_path=memory_path(sys.argv[1])).add("User", text)
"""


def big_content(port, token, workspace: Path) -> dict[str, float]:
    """The event loop's worst delay while a huge message is written, read and compacted."""
    latencies: list[float] = []
    done = threading.Event()

    def measure():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        while not done.is_set():
            start = time.perf_counter()
            get(port, token, "/api/status", connection=conn)
            latencies.append((time.perf_counter() - start) * 1000)
            time.sleep(0.02)
        conn.close()

    timer = threading.Thread(target=measure, daemon=True)
    timer.start()
    try:
        subprocess.run(
            [sys.executable, "-c", HUGE_WRITER, HUGE],
            env={**os.environ, "WORKSPACE_DIR": str(workspace)},
            check=True,
        )
        get(port, token, AGENTS)
        page = get(port, token, f"/nbmemory/api/agents/{HUGE}?offset=0&limit=20&newest_first=1")
        started = time.perf_counter()
        status, _ = post(
            port,
            token,
            f"/nbmemory/api/agents/{HUGE}/compact",
            {"summary": "A summary that goes on. " * (20 * 2**20 // 24)},
        )
        compact_s = time.perf_counter() - started
        assert status == 200, status
    finally:
        done.set()
        timer.join()
    return {
        "big content: event loop delay, max (ms)": max(latencies),
        "big content: event loop delay, p95 (ms)": percentile(latencies, 95),
        "big content: page holding a 10 MiB message (bytes)": len(page[2]),
        "big content: compaction with a 20 MiB summary (s)": compact_s,
    }


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def server_ms(headers) -> float:
    found = re.search(r"dur=([\d.]+)", headers.get("Server-Timing", ""))
    assert found, headers
    return float(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=8.0)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="nbmemory-bench-root-") as tmp:
        root = Path(tmp)
        workspace = root / "agent_workspace"
        started = time.perf_counter()
        build_workspace(workspace)
        print(f"built {MESSAGES:,} messages in {time.perf_counter() - started:.1f} s", flush=True)
        rows: dict[str, list[float]] = {}
        with jupyter_server(root, workspace) as (port, token):
            listed = json.loads(get(port, token, AGENTS)[2])  # warm: parse, count tokens once
            assert listed["agents"][0]["messages"] == MESSAGES, listed
            get(port, token, PAGE)
            idle_p50, idle_p95, p50s, p95s, polls = [], [], [], [], []
            for _ in range(args.runs):
                idle = status_latencies(port, token, args.seconds / 2)
                idle_p50.append(statistics.median(idle))
                idle_p95.append(percentile(idle, 95))
                appender = subprocess.Popen(
                    [sys.executable, "-c", APPENDER, AGENT, str(APPEND_SECONDS)],
                    env={**os.environ, "WORKSPACE_DIR": str(workspace)},
                    stdout=subprocess.PIPE,
                )
                assert appender.stdout is not None and appender.stdout.readline().strip()
                poller = Poller(port, token)
                poller.start()
                try:
                    busy = status_latencies(port, token, args.seconds)
                finally:
                    poller.stop.set()
                    poller.join()
                    appender.terminate()
                    appender.wait(timeout=15)
                p50s.append(statistics.median(busy))
                p95s.append(percentile(busy, 95))
                polls.append(poller.changed / max(1, 2 * poller.polls))
            rows["event loop delay, idle, p50 (ms)"] = idle_p50
            rows["event loop delay, idle, p95 (ms)"] = idle_p95
            rows["event loop delay, p50 (ms)"] = p50s
            rows["event loop delay, p95 (ms)"] = p95s
            rows["polled requests answered 200 (changed), share"] = polls

            agents_ms, page_ms, agents_bytes, page_bytes, total = [], [], [], [], []
            for _ in range(args.runs):
                status, headers, _ = get(port, token, AGENTS)
                agents_tag = headers["ETag"]
                status, headers, _ = get(port, token, PAGE)
                page_tag = headers["ETag"]
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                a_ms, p_ms = [], []
                for _ in range(50):
                    status, headers, body = get(port, token, AGENTS, agents_tag, conn)
                    assert status == 304 and body == b""
                    a_ms.append(server_ms(headers))
                    status, headers, body = get(port, token, PAGE, page_tag, conn)
                    assert status == 304 and body == b""
                    p_ms.append(server_ms(headers))
                conn.close()
                agents_ms.append(statistics.median(a_ms))
                page_ms.append(statistics.median(p_ms))
                a_bytes = len(wire_bytes(port, token, AGENTS, agents_tag))
                p_bytes = len(wire_bytes(port, token, PAGE, page_tag))
                agents_bytes.append(a_bytes)
                page_bytes.append(p_bytes)
                total.append(a_bytes + p_bytes)
            rows["unchanged poll: server time, agents (ms)"] = agents_ms
            rows["unchanged poll: server time, page (ms)"] = page_ms
            rows["unchanged poll: bytes, agents"] = agents_bytes
            rows["unchanged poll: bytes, page"] = page_bytes
            rows["unchanged poll: bytes, agents + page"] = total
            changed = get(port, token, PAGE)
            rows["changed poll: bytes of a page of 20 (body)"] = [len(changed[2])]
            for name, value in big_content(port, token, workspace).items():
                rows[name] = [value]

    width = max(len(name) for name in rows)
    print(f"\n{MESSAGES:,}-message agent, {args.runs} runs, median of runs\n")
    print(f"| {'measure'.ljust(width)} | {'median':>9} | goal    |")
    print(f"|-{'-' * width}-|-{'-' * 9}-|---------|")
    for name, values in rows.items():
        value = statistics.median(values)
        shown = f"{value:,.0f}" if value >= 100 else f"{value:.2f}"
        print(f"| {name.ljust(width)} | {shown:>9} | {GOALS.get(name, ''):<7} |")


if __name__ == "__main__":
    main()
