"""Provider-neutral shapes for talking to an LLM.

The chat loop and the auto-summarizer speak only these types, so swapping
OpenAI for Anthropic (or for nothing) never touches the code that calls a
model. Each concrete provider translates them to its SDK's wire format.
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, get_args

Role = Literal["user", "assistant", "tool"]
ErrorKind = Literal[
    "timeout", "connection", "rate_limit", "auth", "server", "bad_request", "config"
]

# Stop reasons are normalised so callers need not know each vendor's words;
# a reason with no neutral equivalent is passed through unchanged.
STOP_END = "end_turn"
STOP_TOOL_USE = "tool_use"
STOP_MAX_TOKENS = "max_tokens"
STOP_CONTENT_FILTER = "content_filter"

_RETRYABLE_KINDS = frozenset({"timeout", "connection", "rate_limit", "server"})
_ROLES = frozenset(get_args(Role))
# Secrets shorter than this are not scrubbed: replacing every "ab" in a
# message would hide more than it protects, and real keys are long.
_MIN_SECRET_LEN = 6
_MAX_DETAIL_CHARS = 300


@dataclass(frozen=True)
class ToolCall:
    """A model's request to run one tool; `id` pairs it with its result."""

    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class ToolSpec:
    """A tool as offered to the model: the same triple every channel uses."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class Message:
    """One turn of a conversation, in a shape every vendor can be fed from.

    A `tool` message answers the assistant's `ToolCall` with the same
    `tool_call_id`; its `content` is JSON text because every vendor wants a
    string there and the caller knows best how to serialise its result.
    """

    role: Role
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    content: str = ""

    def __post_init__(self) -> None:
        # Caught here rather than as a 400 from a vendor, whose message would
        # not say which of our messages was wrong.
        if self.role not in _ROLES:
            raise ValueError(f"unknown message role {self.role!r}")
        if self.role == "tool" and not self.tool_call_id:
            raise ValueError("a tool message needs the tool_call_id it answers")
        if self.tool_calls and self.role != "assistant":
            raise ValueError("only assistant messages carry tool calls")

    @classmethod
    def user(cls, text: str) -> Message:
        return cls(role="user", text=text)

    @classmethod
    def assistant(cls, text: str = "", tool_calls: Iterable[ToolCall] = ()) -> Message:
        return cls(role="assistant", text=text, tool_calls=list(tool_calls))

    @classmethod
    def tool_result(cls, call: ToolCall, content: str) -> Message:
        return cls(role="tool", tool_call_id=call.id, name=call.name, content=content)


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True)
class Reply:
    """What a model said: text, tool calls, or both."""

    text: str
    tool_calls: list[ToolCall]
    stop_reason: str
    usage: Usage

    def as_message(self) -> Message:
        """The assistant turn to append before sending tool results back."""
        return Message.assistant(self.text, self.tool_calls)


class Provider(Protocol):
    """Anything that can complete a conversation; the rest of chatmem needs no more."""

    name: str
    model: str

    def complete(
        self,
        *,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        max_output_tokens: int = 1024,
    ) -> Reply: ...


class ProviderError(Exception):
    """Every provider failure, whatever the SDK, so callers handle one type.

    `kind` says what went wrong in words a retry policy can act on;
    `retry_after` carries the server's own wait (seconds) when it sent one.
    The message never contains the API key.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: ErrorKind,
        retryable: bool | None = None,
        retry_after: float | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.retryable = kind in _RETRYABLE_KINDS if retryable is None else retryable
        self.retry_after = retry_after
        self.status = status


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """Scrub credentials from text that may be logged or shown to an admin."""
    for secret in secrets:
        if secret and len(secret) >= _MIN_SECRET_LEN:
            text = text.replace(secret, "***")
    return text


def decode_arguments(raw: str | None, *, tool: str) -> dict[str, Any]:
    """Parse a model's JSON-string tool arguments into a dict.

    Malformed JSON is the model's fault and may well not recur, so it is a
    retryable `server` error rather than a silently empty argument dict.
    """
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError) as exc:  # also 4,300+ digits, or nesting past the stack
        raise ProviderError(
            f"the model sent arguments for tool {tool!r} that are not valid JSON",
            kind="server",
            retryable=True,
        ) from exc
    if not isinstance(value, dict):
        raise ProviderError(
            f"the model sent arguments for tool {tool!r} that are not a JSON object",
            kind="server",
            retryable=True,
        )
    return value


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds the server asked us to wait, from `retry-after-ms` or `Retry-After`."""
    if not headers:
        return None
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(float(millis) / 1000, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def _status_kind(status: int) -> ErrorKind:
    if status == 429:
        return "rate_limit"
    if status in (401, 403):
        return "auth"
    if status == 408:
        return "timeout"
    if status >= 500:
        return "server"
    return "bad_request"


def _detail(exc: BaseException) -> str:
    """The server's own explanation, without the SDK's repr of the whole body."""
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping) and isinstance(inner.get("message"), str):
            return str(inner["message"])
    return str(getattr(exc, "message", None) or exc)


def map_sdk_error(
    exc: Exception, *, sdk: Any, provider: str, secrets: Iterable[str | None]
) -> ProviderError:
    """Translate an openai/anthropic SDK exception into a ProviderError.

    Both SDKs are generated from the same template and share class names, so
    one mapping serves both; `sdk` is the imported SDK module. The timeout
    check comes first because `APITimeoutError` subclasses `APIConnectionError`.
    """
    secrets = list(secrets)
    status: int | None = None
    retry_after: float | None = None
    if isinstance(exc, sdk.APITimeoutError):
        kind: ErrorKind = "timeout"
        what = "the request timed out"
    elif isinstance(exc, sdk.APIConnectionError):
        kind = "connection"
        what = "could not connect"
    elif isinstance(exc, sdk.APIStatusError):
        status = int(exc.status_code)
        kind = _status_kind(status)
        what = f"HTTP {status}"
        retry_after = parse_retry_after(exc.response.headers)
    elif isinstance(exc, sdk.APIError):
        # A response we could not read (e.g. not JSON): the server misbehaved.
        kind = "server"
        what = "unreadable response"
    else:
        # The SDKs' base error without a request: credentials or setup.
        kind = "config"
        what = "client setup failed"
    detail = redact(_detail(exc), secrets)[:_MAX_DETAIL_CHARS]
    return ProviderError(
        f"{provider}: {what}: {detail}", kind=kind, retry_after=retry_after, status=status
    )
