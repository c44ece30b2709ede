"""A tiny OpenAI-compatible HTTP server for tests, built on the standard library only.

It lets the suite drive litellm (and the openai SDK underneath) over real HTTP on 127.0.0.1::

    with FakeOpenAI() as server:
        server.reply("Hello there")
        litellm.completion(model="openai/fake-model", api_base=server.url, api_key="k", ...)
        assert server.requests[0]["messages"] == [...]

Each ``POST /v1/chat/completions`` pops the next scripted reply (``"ok"`` once the queue is
empty; one queued with ``reply_with`` is written from the request it answers) and answers in the
format the request asks for: a ``chat.completion`` JSON body, or, when the request says
``"stream": true``, Server-Sent Events sent with chunked transfer encoding.

``POST /v1/embeddings`` answers with :func:`fake_embedding` of each input (a test double, not a
model: words hashed into buckets, a few synonyms mapped to one word first), recorded in
``embedding_requests``; ``embeddings_status`` set to an error status makes it fail.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import math
import re
import socket
import struct
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

EMBEDDING_DIMENSIONS = 256
SYNONYMS = {
    "automobile": "car",
    "vehicle": "car",
    "sedan": "car",
    "physician": "doctor",
    "medic": "doctor",
    "canine": "dog",
    "puppy": "dog",
    "residence": "home",
    "house": "home",
    "job": "work",
    "occupation": "work",
    "employer": "work",
}
"""Words the fake embedding treats as one: how a question in other words finds a fact."""
_STOP = frozenset(
    "a an and are at be did do does for i in is it my of on the to was what which who with you "
    "your".split()
)


def fake_embedding(text: str, dimensions: int = EMBEDDING_DIMENSIONS) -> list[float]:
    """A deterministic unit vector for ``text``: each word (lower-cased, trailing "s" cut,
    mapped through ``SYNONYMS``, stop words left out) adds one to a bucket its hash picks. Texts
    sharing words, or synonyms, point the same way; texts sharing none are orthogonal but for
    bucket collisions. A test double standing in for an embedding model, nothing more."""
    vector = [0.0] * dimensions
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        word = SYNONYMS.get(word, word)
        if len(word) > 3 and word.endswith("s"):
            word = SYNONYMS.get(word[:-1], word[:-1])
        if word in _STOP:
            continue
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        vector[int.from_bytes(digest, "little") % dimensions] += 1.0
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


_ERRORS: dict[int, tuple[str, str | None]] = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "permission_denied"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("rate_limit_exceeded", "rate_limit_exceeded"),
    500: ("server_error", "server_error"),
    503: ("server_error", "service_unavailable"),
}


@dataclass
class Reply:
    """One scripted answer to a chat completion request."""

    text: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200
    delay: float = 0.0
    error_message: str | None = None
    retry_after: str | None = None


def _pieces(text: str) -> list[str]:
    """Split ``text`` into small pieces (words with their trailing spaces) that join back to it."""
    return re.findall(r"\S+\s*|\s+", text) or [text]


def _halves(text: str) -> list[str]:
    """Split ``text`` in two (or keep it whole when it is too short to split)."""
    mid = len(text) // 2
    return [text[:mid], text[mid:]] if mid else [text]


class _Server(ThreadingHTTPServer):
    """ThreadingHTTPServer that disables Nagle's algorithm on every accepted socket and, when
    closed, hangs up on the connections its clients keep alive and waits for their threads."""

    daemon_threads = True
    owner: FakeOpenAI

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self.connections: set[socket.socket] = set()
        self._handlers: list[threading.Thread] = []
        self._connections_lock = threading.Lock()

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, addr = super().get_request()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._connections_lock:
            self.connections.add(sock)
        return sock, addr

    def process_request(self, request: Any, client_address: Any) -> None:
        """Serve the connection in a daemon thread, remembered so that closing can wait for it."""
        thread = threading.Thread(
            target=self.process_request_thread, args=(request, client_address), daemon=True
        )
        self._handlers = [t for t in self._handlers if t.is_alive()] + [thread]
        thread.start()

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self.connections.discard(request)
            super().shutdown_request(request)

    def server_close(self) -> None:
        """Stop listening, end the connections still open (a kept-alive one waits for a request
        that will never come) and wait until their threads have closed them."""
        super().server_close()
        with self._connections_lock:
            for sock in self.connections:
                with suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
        for thread in self._handlers:
            thread.join(timeout=5)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Ignore clients that hang up (timeouts, abandoned streams); report anything else."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    """Routes requests to the owning :class:`FakeOpenAI`."""

    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr request log."""

    def do_GET(self) -> None:
        """``GET /v1/models``: a one-model list."""
        if self.path.rstrip("/").endswith("/models"):
            body = {
                "object": "list",
                "data": [{"id": "fake-model", "object": "model", "created": 0, "owned_by": "fake"}],
            }
            self._send_json(200, body)
        else:
            self._send_json(404, self._error_body(404, f"no route for GET {self.path}"))

    def do_POST(self) -> None:
        """``POST /v1/chat/completions``: record the request, then send the next scripted reply;
        ``POST /v1/embeddings``: the fake embedding of each input."""
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.rstrip("/").endswith("/embeddings"):
            self._embeddings(raw)
            return
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send_json(404, self._error_body(404, f"no route for POST {self.path}"))
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send_json(400, self._error_body(400, "request body is not valid JSON"))
            return
        owner = self.server.owner
        reply = owner._record(body, {k.lower(): v for k, v in self.headers.items()})
        if reply.delay and owner._stopping.wait(reply.delay):
            self.close_connection = True
            return
        try:
            if reply.status != 200:
                headers = {"retry-after": reply.retry_after} if reply.retry_after else {}
                error = self._error_body(reply.status, reply.error_message)
                self._send_json(reply.status, error, headers)
            elif body.get("stream"):
                self._send_stream(body, reply)
            else:
                self._send_json(200, owner._completion(body, reply))
        except ConnectionError:
            self.close_connection = True  # the client gave up (e.g. it timed out)

    def _embeddings(self, raw: bytes) -> None:
        owner = self.server.owner
        body = json.loads(raw or b"{}")
        with owner._lock:
            owner.embedding_requests.append(body)
            status = owner.embeddings_status
        if status != 200:
            self._send_json(status, self._error_body(status, None))
            return
        texts = body.get("input") or []
        texts = [texts] if isinstance(texts, str) else texts
        data = []
        dimensions = body.get("dimensions") or EMBEDDING_DIMENSIONS
        made = owner.embed(texts) if owner.embed else [fake_embedding(t, dimensions) for t in texts]
        for i, vector in enumerate(made):
            vector = [float(x) for x in vector]
            if body.get("encoding_format") == "base64":
                vector = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
            data.append({"object": "embedding", "index": i, "embedding": vector})
        words = sum(len(text.split()) for text in texts)
        usage = {"prompt_tokens": words, "total_tokens": words}
        payload = {"object": "list", "data": data, "model": body.get("model"), "usage": usage}
        self._send_json(200, payload)

    @staticmethod
    def _error_body(status: int, message: str | None) -> dict[str, Any]:
        kind, code = _ERRORS.get(status, ("invalid_request_error", None))
        text = message or f"fake error {status}"
        return {"error": {"message": text, "type": kind, "param": None, "code": code}}

    def _send_json(
        self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        """Send ``payload`` as a JSON body with its Content-Length (the connection stays open)."""
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _send_stream(self, body: dict[str, Any], reply: Reply) -> None:
        """Send ``reply`` as SSE events, one HTTP chunk (and one flush) per event."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        # The sync openai SDK stops reading at [DONE] and drops the connection, so never reuse it.
        self.send_header("Connection", "close")
        self.close_connection = True
        self.end_headers()
        for chunk in self.server.owner._chunks(body, reply):
            data = f"data: {chunk}\n\n".encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class FakeOpenAI:
    """An OpenAI-compatible chat completions server on 127.0.0.1 with scripted replies.

    ``embed`` (texts -> vectors) stands in for :func:`fake_embedding` behind ``/v1/embeddings``
    (a benchmark serves a real model through it)."""

    def __init__(self, embed: Any = None) -> None:
        self.embed = embed
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []  # header names lower-cased
        self.embedding_requests: list[dict[str, Any]] = []
        self.embeddings_status = 200
        """What ``/v1/embeddings`` answers with: 200, or an error status (500, 404, …)."""
        self.url = ""
        self._replies: deque[Reply | Callable[[dict[str, Any]], dict[str, Any]]] = deque()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> FakeOpenAI:
        """Bind a free port on 127.0.0.1 and serve from a daemon thread."""
        if self._server is not None:
            return self
        self._stopping.clear()
        server = _Server(("127.0.0.1", 0), _Handler)
        server.owner = self
        self._server = server
        self.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, hang up on every client and release the port (pending delays are cut
        short)."""
        if self._server is None:
            return
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    @property
    def open_connections(self) -> int:
        """How many client connections the server holds open now."""
        server = self._server
        return len(server.connections) if server is not None else 0

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def reply(
        self,
        text: str | None = None,
        *,
        tool_calls: list[dict[str, Any]] | None = None,
        status: int = 200,
        delay: float = 0.0,
        error_message: str | None = None,
        retry_after: str | int | float | None = None,
    ) -> None:
        """Queue one scripted reply for the next chat completion request.

        ``retry_after`` becomes a ``retry-after`` header. The openai SDK only honours values above
        zero: ``"0"`` falls back to its ~0.4 s backoff, ``"0.01"`` retries almost at once.
        """
        after = None if retry_after is None else str(retry_after)
        scripted = Reply(text, list(tool_calls or []), status, delay, error_message, after)
        with self._lock:
            self._replies.append(scripted)

    def reply_with(self, script: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        """Queue a reply written when its request comes: ``script(request body)`` returns its
        ``text`` and ``tool_calls``, as :meth:`reply` takes them (a scripted model that reads
        what it was sent, such as a tool's result, before it answers)."""
        with self._lock:
            self._replies.append(script)

    def _record(self, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        """Store the request and pop the reply it gets (``"ok"`` when nothing is scripted)."""
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            scripted = self._replies.popleft() if self._replies else Reply("ok")
        if callable(scripted):
            written = scripted(body)
            scripted = Reply(written.get("text"), list(written.get("tool_calls") or []))
        return scripted

    def _wire_calls(self, reply: Reply) -> list[dict[str, Any]]:
        """Tool calls in OpenAI wire format, each with a fresh ``call_<n>`` id."""
        with self._lock:
            ids = [f"call_{next(self._ids)}" for _ in reply.tool_calls]
        return [
            {
                "id": call_id,
                "type": "function",
                "function": {
                    "name": call["name"],
                    "arguments": json.dumps(call.get("arguments", {})),
                },
            }
            for call_id, call in zip(ids, reply.tool_calls, strict=True)
        ]

    @staticmethod
    def _usage(body: dict[str, Any], text: str) -> dict[str, int]:
        """A plausible usage block: about four characters per token."""
        prompt = max(1, len(json.dumps(body.get("messages", []))) // 4)
        completion = max(1, len(text) // 4)
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }

    def _completion(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        """A non-streaming ``chat.completion`` body."""
        calls = self._wire_calls(reply)
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if calls:
            message["tool_calls"] = calls
        elif reply.text is None:
            message["content"] = ""
        generated = (reply.text or "") + "".join(c["function"]["arguments"] for c in calls)
        return {
            "id": f"chatcmpl-{id(reply):x}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake-model"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": "tool_calls" if calls else "stop",
                }
            ],
            "usage": self._usage(body, generated),
        }

    def _chunks(self, body: dict[str, Any], reply: Reply) -> list[str]:
        """The SSE ``data:`` payloads of a streamed answer, ending with ``[DONE]``."""
        calls = self._wire_calls(reply)
        base = {
            "id": f"chatcmpl-{id(reply):x}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body.get("model", "fake-model"),
        }

        def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            return json.dumps({**base, "choices": [choice]})

        out = [chunk({"role": "assistant"})]
        if reply.text:
            out += [chunk({"content": piece}) for piece in _pieces(reply.text)]
        for index, call in enumerate(calls):
            fn = call["function"]
            head = {"index": index, "id": call["id"], "type": "function"}
            out.append(
                chunk({"tool_calls": [{**head, "function": {"name": fn["name"], "arguments": ""}}]})
            )
            for part in _halves(fn["arguments"]):
                out.append(
                    chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
                )
        out.append(chunk({}, "tool_calls" if calls else "stop"))
        if (body.get("stream_options") or {}).get("include_usage"):
            generated = (reply.text or "") + "".join(c["function"]["arguments"] for c in calls)
            out.append(json.dumps({**base, "choices": [], "usage": self._usage(body, generated)}))
        out.append("[DONE]")
        return out
