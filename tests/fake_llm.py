"""A local fake of the OpenAI and Anthropic HTTP APIs, for tests.

Both SDKs now ride on `httpx2`, which httpx mocking libraries cannot reach,
and a real socket also exercises the SDKs' own serialisation, retries and
error mapping. The fake records every request and answers from a script.

Base URLs: OpenAI clients use `fake.openai_base_url` (ends in `/v1`);
Anthropic clients use `fake.anthropic_base_url` (no `/v1`, the SDK adds it).
"""

from __future__ import annotations

import json
import socket
import threading
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

RESPONSES = "/v1/responses"
CHAT = "/v1/chat/completions"
MESSAGES = "/v1/messages"
PATHS = (RESPONSES, CHAT, MESSAGES)

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
}


@dataclass(frozen=True)
class Recorded:
    """One request as the fake saw it; header names are lower-cased."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass(frozen=True)
class Scripted:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


# --- reply bodies, complete enough to pass the SDKs' strict validation ---


def openai_text(text: str, *, input_tokens: int = 10, output_tokens: int = 5) -> dict[str, Any]:
    return _openai_response(
        [
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ],
        input_tokens,
        output_tokens,
    )


def openai_tool_call(
    name: str, arguments: Mapping[str, Any], *, call_id: str = "call_1"
) -> dict[str, Any]:
    return _openai_response(
        [
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": call_id,
                "name": name,
                "arguments": json.dumps(arguments),
                "status": "completed",
            }
        ],
        12,
        7,
    )


def _openai_response(output: list[dict[str, Any]], inp: int, out: int) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "model": "fake-model",
        "status": "completed",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": inp,
            "output_tokens": out,
            "total_tokens": inp + out,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def chat_text(text: str, *, input_tokens: int = 10, output_tokens: int = 5) -> dict[str, Any]:
    message = {"role": "assistant", "content": text, "refusal": None}
    return _chat_completion(message, "stop", input_tokens, output_tokens)


def chat_tool_call(
    name: str, arguments: Mapping[str, Any], *, call_id: str = "call_1"
) -> dict[str, Any]:
    message = {
        "role": "assistant",
        "content": None,
        "refusal": None,
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ],
    }
    return _chat_completion(message, "tool_calls", 12, 7)


def _chat_completion(message: dict[str, Any], finish: str, inp: int, out: int) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "fake-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": inp, "completion_tokens": out, "total_tokens": inp + out},
    }


def anthropic_text(text: str, *, input_tokens: int = 10, output_tokens: int = 5) -> dict[str, Any]:
    return _anthropic_message(
        [{"type": "text", "text": text}], "end_turn", input_tokens, output_tokens
    )


def anthropic_tool_use(
    name: str, arguments: Mapping[str, Any], *, call_id: str = "toolu_1", text: str = ""
) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    blocks.append({"type": "tool_use", "id": call_id, "name": name, "input": dict(arguments)})
    return _anthropic_message(blocks, "tool_use", 12, 7)


def _anthropic_message(
    content: list[dict[str, Any]], stop: str, inp: int, out: int
) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "fake-model",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": inp, "output_tokens": out},
    }


def error_body(path: str, status: int, message: str) -> dict[str, Any]:
    """An error in the wire format of the API that `path` belongs to."""
    kind = _ERROR_TYPES.get(status, "api_error")
    if path == MESSAGES:
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


# --- the server ------------------------------------------------------------


class FakeLLM:
    """A threaded HTTP server on 127.0.0.1 that plays back scripted replies.

    Each API path has its own FIFO of replies; a request with nothing
    scripted gets a 500 whose message says so, which fails the test loudly.
    """

    def __init__(self, port: int = 0) -> None:
        """On a free port, or on `port` when a documented URL names one."""
        self.requests: list[Recorded] = []
        self._queues: dict[str, deque[Scripted]] = {path: deque() for path in PATHS}
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def openai_base_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    def start(self) -> FakeLLM:
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()  # wakes handlers sleeping out a scripted delay
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # scripting

    def enqueue(
        self,
        path: str,
        status: int = 200,
        body: Any = None,
        *,
        headers: Mapping[str, str] | None = None,
        delay: float = 0.0,
    ) -> None:
        if path not in self._queues:
            raise ValueError(f"the fake does not serve {path!r}")
        with self._lock:
            self._queues[path].append(Scripted(status, body, dict(headers or {}), delay))

    def enqueue_error(
        self,
        path: str,
        status: int,
        message: str = "scripted error",
        *,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.enqueue(path, status, error_body(path, status, message), headers=headers)

    def requests_to(self, path: str) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.path == path]

    # called from handler threads

    def _take(self, recorded: Recorded) -> Scripted:
        with self._lock:
            self.requests.append(recorded)
            queue = self._queues.get(recorded.path)
            if queue:
                return queue.popleft()
        message = f"fake_llm: nothing scripted for {recorded.method} {recorded.path}"
        return Scripted(500, error_body(recorded.path, 500, message))


def _handler_for(fake: FakeLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body: Any = json.loads(raw) if raw else None
            except json.JSONDecodeError:
                body = raw.decode("utf-8", "replace")
            headers = {k.lower(): v for k, v in self.headers.items()}
            reply = fake._take(Recorded("POST", self.path, headers, body))
            if reply.delay and fake._closing.wait(reply.delay):
                return
            payload = json.dumps(reply.body).encode()
            try:
                self.send_response(reply.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up first (a timeout test); nothing to tell it

        def log_message(self, format: str, *args: Any) -> None:
            """Silence per-request logging; the recorded requests say more."""

    return Handler


def closed_port() -> int:
    """A port that was just bound and released, so connecting to it is refused."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --- pytest fixtures -------------------------------------------------------

PROVIDER_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_ADMIN_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "OPENAI_CUSTOM_HEADERS",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_CUSTOM_HEADERS",
    "ANTHROPIC_PROFILE",
    "ANTHROPIC_CONFIG_DIR",
)


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    """A running fake, closed after the test."""
    with FakeLLM() as fake:
        yield fake


@pytest.fixture
def provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Clear the SDKs' environment so no test can reach a real provider or key."""
    for name in PROVIDER_ENV:
        monkeypatch.delenv(name, raising=False)
