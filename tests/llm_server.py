"""A scripted, OpenAI-compatible HTTP server for tests (no model behind it).

`ScriptedLLMServer` listens on 127.0.0.1 on an ephemeral port and answers
POST /v1/chat/completions (streamed as server-sent events, or not) and
GET /v1/models.  Each chat request takes the next `ScriptedReply` from a
queue; a reply is fixed test text, optionally with a fault: an HTTP status
with headers (429 + Retry-After, 500, 401 ...), a delay before answering, a
stream cut after N chunks, a raw (e.g. non-JSON) body, or a request held open
until the server stops.  Every request body is recorded so tests can assert
what was asked, and the highest number of requests in flight at once is
tracked so tests can check a client's concurrency limit.

Other test modules use it directly or through the `llm_server` fixture:

    from tests.llm_server import ScriptedLLMServer, ScriptedReply, llm_server

    def test_something(llm_server):
        llm_server.script("def f(): ...")
        ...  # point an OpenAI client at llm_server.base_url

Nothing here imports csro_tui: the server is a neutral stand-in for an LLM
endpoint and knows nothing about the code under test.
"""

from __future__ import annotations

import json
import socket
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

import pytest

__all__ = ["ScriptedLLMServer", "ScriptedReply", "RecordedRequest", "closed_port_url", "llm_server"]


@dataclass
class ScriptedReply:
    """One scripted answer to one chat-completions request."""

    text: str = ""
    finish_reason: str | None = "stop"
    # HTTP status; >= 400 sends an OpenAI-style error body instead of a reply.
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)  # e.g. {"Retry-After": "1"}
    error_message: str = "scripted error"
    error_code: str | None = None
    error_param: str | None = None
    delay_s: float = 0.0  # wait before sending the status line
    chunk_delay_s: float = 0.0  # wait between streamed chunks
    chunk_chars: int = 8  # characters of `text` per streamed chunk
    # Streamed replies only: send this many content chunks, then drop the
    # connection without finishing the response.
    cut_after_chunks: int | None = None
    # Send these bytes verbatim as the body (with `status`), e.g. non-JSON.
    raw_body: str | None = None
    raw_content_type: str = "text/html"
    # Usage is reported when the request asks for it (stream_options
    # include_usage) or when not streaming, unless this is False.
    usage: bool = True
    prompt_tokens: int | None = None  # None -> request characters // 4
    completion_tokens: int | None = None  # None -> len(text) // 4
    hang: bool = False  # hold the request open (no answer) until the server stops

    @classmethod
    def error(cls, status: int, message: str = "scripted error", **kwargs: Any) -> "ScriptedReply":
        """An HTTP error answer, e.g. `ScriptedReply.error(429, headers={"Retry-After": "2"})`."""
        return cls(status=status, error_message=message, **kwargs)


@dataclass
class RecordedRequest:
    """What the server received (the Authorization header is not kept)."""

    method: str
    path: str
    body: Any  # parsed JSON, or the raw text if it was not JSON, or None
    authorized: bool  # whether an expected api_key (if any) matched


class ScriptedLLMServer:
    """A fake OpenAI-compatible endpoint driven by a queue of `ScriptedReply`s.

    Use as a context manager or call `start()`/`stop()`.  `base_url` is
    "http://127.0.0.1:PORT/v1".  With `api_key` set, requests without
    "Authorization: Bearer <api_key>" get 401.  `reject_params` names request
    fields that make the server answer 400 with that `param` (to imitate
    servers that do not support e.g. "stream_options").  A request arriving
    when the queue is empty gets 400 "no scripted reply left".
    """

    def __init__(
        self,
        replies: list[ScriptedReply | str] | None = None,
        *,
        models: tuple[str, ...] = ("scripted-model",),
        api_key: str | None = None,
        reject_params: tuple[str, ...] = (),
    ) -> None:
        self._replies: deque[ScriptedReply] = deque()
        self.models = models
        self.api_key = api_key
        self.reject_params = tuple(reject_params)
        self.requests: list[RecordedRequest] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.unscripted_requests = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        if replies:
            self.script(*replies)

    # ----------------------------------------------------------- scripting
    def script(self, *replies: ScriptedReply | str) -> "ScriptedLLMServer":
        """Queue replies (a plain string is a normal reply with that text)."""
        with self._lock:
            for reply in replies:
                self._replies.append(ScriptedReply(text=reply) if isinstance(reply, str) else reply)
        return self

    @property
    def pending(self) -> int:
        """Scripted replies not used yet."""
        with self._lock:
            return len(self._replies)

    @property
    def chat_requests(self) -> list[Any]:
        """Bodies of the chat-completions requests received, in arrival order."""
        with self._lock:
            return [r.body for r in self.requests if r.path.endswith("/chat/completions")]

    # ----------------------------------------------------------- lifecycle
    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("server not started")
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> "ScriptedLLMServer":
        if self._httpd is not None:
            return self
        self._stopping.clear()
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.scripted = self
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True,
            name="scripted-llm-server",
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        self._stopping.set()  # releases delayed and hanging handlers
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> "ScriptedLLMServer":
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # ----------------------------------------------------------- internals
    def _next_reply(self) -> ScriptedReply | None:
        with self._lock:
            return self._replies.popleft() if self._replies else None

    def _enter(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _wait(self, seconds: float) -> bool:
        """Sleep unless the server is stopping; True if it is stopping."""
        return self._stopping.wait(seconds) if seconds > 0 else self._stopping.is_set()


def closed_port_url() -> str:
    """A base URL on 127.0.0.1 where nothing listens (connection refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    scripted: ScriptedLLMServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
        pass  # keep test output clean

    # ------------------------------------------------------------- routing
    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        owner = self.server.scripted
        authorized = self._authorized()
        with owner._lock:
            owner.requests.append(RecordedRequest("GET", self.path, None, authorized))
        if not authorized:
            return self._send_error_json(401, "Incorrect API key provided", "invalid_api_key", None)
        if self.path.rstrip("/") == "/v1/models":
            data = [{"id": m, "object": "model", "created": 0, "owned_by": "scripted"} for m in owner.models]
            return self._send_json(200, {"object": "list", "data": data})
        self._send_error_json(404, f"no route {self.path}", None, None)

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        owner = self.server.scripted
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length).decode("utf-8", "replace")
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = raw
        authorized = self._authorized()
        with owner._lock:
            owner.requests.append(RecordedRequest("POST", self.path, body, authorized))
        if self.path.rstrip("/") != "/v1/chat/completions":
            return self._send_error_json(404, f"no route {self.path}", None, None)
        owner._enter()
        try:
            self._chat(owner, body, authorized)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            pass  # the client gave up (timeout, cancel): nothing to answer
        finally:
            owner._leave()

    def _chat(self, owner: ScriptedLLMServer, body: Any, authorized: bool) -> None:
        if not authorized:
            return self._send_error_json(401, "Incorrect API key provided", "invalid_api_key", None)
        if not isinstance(body, dict):
            return self._send_error_json(400, "request body is not JSON", None, None)
        for param in owner.reject_params:
            if param in body:
                return self._send_error_json(
                    400, f"Unsupported parameter: '{param}'", "unsupported_parameter", param
                )
        reply = owner._next_reply()
        if reply is None:
            with owner._lock:
                owner.unscripted_requests += 1
            return self._send_error_json(400, "no scripted reply left", None, None)
        if reply.hang:
            owner._stopping.wait()
            return
        if owner._wait(reply.delay_s):
            return
        if reply.raw_body is not None:
            return self._send_raw(reply.status, reply.raw_body, reply.raw_content_type, reply.headers)
        if reply.status >= 400:
            return self._send_error_json(
                reply.status, reply.error_message, reply.error_code, reply.error_param, reply.headers
            )
        usage = _usage(reply, body)
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            self._stream(owner, reply, body, usage if include_usage and reply.usage else None)
        else:
            self._send_json(
                reply.status,
                {
                    "id": "chatcmpl-scripted",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body.get("model", ""),
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": reply.text},
                            "finish_reason": reply.finish_reason,
                        }
                    ],
                    **({"usage": usage} if reply.usage else {}),
                },
                reply.headers,
            )

    def _stream(
        self, owner: ScriptedLLMServer, reply: ScriptedReply, body: dict, usage: dict | None
    ) -> None:
        self.send_response(reply.status)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()

        def chunk(choices: list, extra: dict | None = None) -> dict:
            return {
                "id": "chatcmpl-scripted",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": body.get("model", ""),
                "choices": choices,
                **(extra or {}),
            }

        step = max(1, reply.chunk_chars)
        pieces = [reply.text[i : i + step] for i in range(0, len(reply.text), step)]
        self._send_event(chunk([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]))
        for sent, piece in enumerate(pieces):
            if reply.cut_after_chunks is not None and sent >= reply.cut_after_chunks:
                self._drop_connection()
                return
            if sent and owner._wait(reply.chunk_delay_s):
                return
            self._send_event(chunk([{"index": 0, "delta": {"content": piece}, "finish_reason": None}]))
        if reply.cut_after_chunks is not None:
            self._drop_connection()
            return
        self._send_event(chunk([{"index": 0, "delta": {}, "finish_reason": reply.finish_reason}]))
        if usage is not None:
            self._send_event(chunk([], {"usage": usage}))
        self._send_chunk(b"data: [DONE]\n\n")
        self._send_chunk(b"")  # end of the chunked body

    # ------------------------------------------------------------- writing
    def _authorized(self) -> bool:
        expected = self.server.scripted.api_key
        return expected is None or self.headers.get("Authorization") == f"Bearer {expected}"

    def _send_event(self, payload: dict) -> None:
        self._send_chunk(f"data: {json.dumps(payload)}\n\n".encode())

    def _send_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _drop_connection(self) -> None:
        # Abort mid-body: the chunked response never gets its terminator.
        self.wfile.flush()
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _send_json(self, status: int, payload: dict, headers: dict[str, str] | None = None) -> None:
        self._send_raw(status, json.dumps(payload), "application/json", headers or {})

    def _send_error_json(
        self,
        status: int,
        message: str,
        code: str | None,
        param: str | None,
        headers: dict[str, str] | None = None,
    ) -> None:
        error = {"message": message, "type": "scripted_error", "param": param, "code": code}
        self._send_json(status, {"error": error}, headers)

    def _send_raw(self, status: int, text: str, content_type: str, headers: dict[str, str]) -> None:
        data = text.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()
        self.close_connection = True


def _usage(reply: ScriptedReply, body: dict) -> dict:
    messages = body.get("messages") or []
    request_chars = sum(len(str(m.get("content", ""))) for m in messages if isinstance(m, dict))
    prompt = reply.prompt_tokens if reply.prompt_tokens is not None else request_chars // 4
    completion = reply.completion_tokens if reply.completion_tokens is not None else len(reply.text) // 4
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


@pytest.fixture
def llm_server() -> Iterator[ScriptedLLMServer]:
    """A started `ScriptedLLMServer` with an empty script, stopped afterwards."""
    with ScriptedLLMServer() as server:
        yield server
