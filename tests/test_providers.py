"""The providers, driven through the real SDKs against a local fake server."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from chatmem.providers import (
    DEFAULT_ANTHROPIC_MODEL,
    DEFAULT_OPENAI_MODEL,
    DEFAULTS,
    Message,
    OfflineProvider,
    ProviderError,
    ToolCall,
    ToolSpec,
    Usage,
    is_offline,
    provider_from_config,
)
from chatmem.providers.anthropic import AnthropicProvider
from chatmem.providers.openai import OpenAIProvider
from tests.fake_llm import (
    CHAT,
    MESSAGES,
    RESPONSES,
    FakeLLM,
    anthropic_text,
    anthropic_tool_use,
    chat_text,
    chat_tool_call,
    closed_port,
    openai_text,
    openai_tool_call,
)

pytestmark = [pytest.mark.usefixtures("provider_env"), pytest.mark.db_free]  # a fake server only

KEY = "sk-test-SECRET-0123456789"
SYSTEM = "You keep project memory."
RECALL = ToolSpec(
    name="recall",
    description="Look up approved project memory.",
    input_schema={
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
    },
)


@dataclass(frozen=True)
class Flavour:
    """One wire format: how to build its provider and script its replies."""

    id: str
    path: str
    build: Callable[..., Any]
    text: Callable[..., dict[str, Any]]
    tool_call: Callable[..., dict[str, Any]]


def _openai(api: str) -> Callable[..., Any]:
    def build(fake_url: str, **kwargs: Any) -> OpenAIProvider:
        options: dict[str, Any] = {"model": "gpt-test", "api_key": KEY, "max_retries": 0}
        options.update(kwargs)
        return OpenAIProvider(api=api, base_url=f"{fake_url}/v1", **options)

    return build


def _anthropic(fake_url: str, **kwargs: Any) -> AnthropicProvider:
    options: dict[str, Any] = {"model": "claude-test", "api_key": KEY, "max_retries": 0}
    options.update(kwargs)
    return AnthropicProvider(base_url=fake_url, **options)


FLAVOURS = [
    Flavour("responses", RESPONSES, _openai("responses"), openai_text, openai_tool_call),
    Flavour("chat", CHAT, _openai("chat"), chat_text, chat_tool_call),
    Flavour("anthropic", MESSAGES, _anthropic, anthropic_text, anthropic_tool_use),
]


@pytest.fixture(params=FLAVOURS, ids=[f.id for f in FLAVOURS])
def flavour(request: pytest.FixtureRequest) -> Flavour:
    return request.param  # type: ignore[no-any-return]


FLAVOUR = {f.id: f for f in FLAVOURS}


@pytest.fixture
def build(fake_llm: FakeLLM) -> Iterator[Callable[..., Any]]:
    """Build a provider of a named flavour pointed at the fake; close it afterwards."""
    built: list[Any] = []

    def factory(flavour_id: str, url: str | None = None, **kwargs: Any) -> Any:
        provider = FLAVOUR[flavour_id].build(url or fake_llm.url, **kwargs)
        built.append(provider)
        return provider

    yield factory
    for provider in built:
        provider.close()


@pytest.fixture
def make(build: Callable[..., Any], flavour: Flavour) -> Callable[..., Any]:
    """`build` for the flavour this parametrised test is running."""
    return functools.partial(build, flavour.id)


# --- plain text ------------------------------------------------------------


def test_text_completion_responses(fake_llm: FakeLLM, build: Callable[..., Any]) -> None:
    fake_llm.enqueue(RESPONSES, body=openai_text("Summary.", input_tokens=11, output_tokens=3))
    provider = build("responses")
    reply = provider.complete(system=SYSTEM, messages=[Message.user("hi")], max_output_tokens=300)

    (request,) = fake_llm.requests
    assert request.path == "/v1/responses"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.body == {
        "model": "gpt-test",
        "instructions": SYSTEM,
        "input": [{"role": "user", "content": "hi"}],
        "max_output_tokens": 300,
        "store": False,
    }
    assert reply.text == "Summary."
    assert reply.tool_calls == []
    assert reply.stop_reason == "end_turn"
    assert reply.usage == Usage(11, 3)


def test_text_completion_chat(fake_llm: FakeLLM, build: Callable[..., Any]) -> None:
    fake_llm.enqueue(CHAT, body=chat_text("Summary.", input_tokens=11, output_tokens=3))
    provider = build("chat")
    reply = provider.complete(system=SYSTEM, messages=[Message.user("hi")], max_output_tokens=300)

    (request,) = fake_llm.requests
    assert request.path == "/v1/chat/completions"
    assert request.body == {
        "model": "gpt-test",
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "hi"},
        ],
        "max_completion_tokens": 300,
    }
    assert reply.text == "Summary."
    assert reply.stop_reason == "end_turn"
    assert reply.usage == Usage(11, 3)


def test_text_completion_anthropic(fake_llm: FakeLLM, build: Callable[..., Any]) -> None:
    fake_llm.enqueue(MESSAGES, body=anthropic_text("Summary.", input_tokens=11, output_tokens=3))
    provider = build("anthropic")
    reply = provider.complete(system=SYSTEM, messages=[Message.user("hi")], max_output_tokens=300)

    (request,) = fake_llm.requests
    assert request.path == "/v1/messages"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert "anthropic-version" in request.headers
    assert request.body == {
        "model": "claude-test",
        "system": SYSTEM,
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 300,
    }
    for absent in ("temperature", "top_p", "top_k"):
        assert absent not in request.body
    assert reply.text == "Summary."
    assert reply.stop_reason == "end_turn"
    assert reply.usage == Usage(11, 3)


def test_anthropic_picks_text_blocks_by_type(fake_llm: FakeLLM, build: Callable[..., Any]) -> None:
    body = anthropic_text("the answer")
    body["content"].insert(0, {"type": "thinking", "thinking": "hmm", "signature": "sig"})
    fake_llm.enqueue(MESSAGES, body=body)
    provider = build("anthropic")
    reply = provider.complete(system="", messages=[Message.user("q")])
    assert reply.text == "the answer"
    assert "system" not in fake_llm.requests[0].body


# --- tool round trips ------------------------------------------------------


def _round_trip(fake: FakeLLM, flavour: Flavour, provider: Any) -> tuple[dict[str, Any], Any]:
    """Ask, get a tool call, answer it; return the (second, first) request bodies."""
    fake.enqueue(flavour.path, body=flavour.tool_call("recall", {"query": "tone"}, call_id="c-7"))
    fake.enqueue(flavour.path, body=flavour.text("Use a friendly tone."))
    history = [Message.user("How should posts sound?")]

    first = provider.complete(system=SYSTEM, messages=history, tools=[RECALL])
    assert first.stop_reason == "tool_use"
    (call,) = first.tool_calls
    assert (call.id, call.name, call.arguments) == ("c-7", "recall", {"query": "tone"})

    history += [first.as_message(), Message.tool_result(call, json.dumps({"hits": ["friendly"]}))]
    second = provider.complete(system=SYSTEM, messages=history, tools=[RECALL])
    assert second.text == "Use a friendly tone."
    assert second.tool_calls == []
    return fake.requests[1].body, fake.requests[0].body


def test_tool_round_trip_responses(fake_llm: FakeLLM, build: Callable[..., Any]) -> None:
    provider = build("responses")
    body, first = _round_trip(fake_llm, FLAVOUR["responses"], provider)
    assert first["tools"] == [
        {
            "type": "function",
            "name": "recall",
            "description": RECALL.description,
            "parameters": RECALL.input_schema,
            "strict": False,
        }
    ]
    assert body["store"] is False
    assert body["input"] == [
        {"role": "user", "content": "How should posts sound?"},
        {
            "type": "function_call",
            "call_id": "c-7",
            "name": "recall",
            "arguments": json.dumps({"query": "tone"}),
        },
        {"type": "function_call_output", "call_id": "c-7", "output": '{"hits": ["friendly"]}'},
    ]


def test_tool_round_trip_chat(fake_llm: FakeLLM, build: Callable[..., Any]) -> None:
    provider = build("chat")
    body, first = _round_trip(fake_llm, FLAVOUR["chat"], provider)
    assert first["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "recall",
                "description": RECALL.description,
                "parameters": RECALL.input_schema,
            },
        }
    ]
    assert body["messages"][1:] == [
        {"role": "user", "content": "How should posts sound?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c-7",
                    "type": "function",
                    "function": {"name": "recall", "arguments": json.dumps({"query": "tone"})},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c-7", "content": '{"hits": ["friendly"]}'},
    ]


def test_tool_round_trip_anthropic(fake_llm: FakeLLM, build: Callable[..., Any]) -> None:
    provider = build("anthropic")
    body, first = _round_trip(fake_llm, FLAVOUR["anthropic"], provider)
    assert first["tools"] == [
        {"name": "recall", "description": RECALL.description, "input_schema": RECALL.input_schema}
    ]
    assert body["messages"] == [
        {"role": "user", "content": "How should posts sound?"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "c-7", "name": "recall", "input": {"query": "tone"}}
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c-7", "content": '{"hits": ["friendly"]}'}
            ],
        },
    ]


def test_anthropic_merges_parallel_tool_results_into_one_user_turn(
    fake_llm: FakeLLM, build: Callable[..., Any]
) -> None:
    fake_llm.enqueue(MESSAGES, body=anthropic_text("done"))
    a = ToolCall("t1", "recall", {"query": "a"})
    b = ToolCall("t2", "recall", {"query": "b"})
    history = [
        Message.user("q"),
        Message.assistant("Checking.", [a, b]),
        Message.tool_result(a, "1"),
        Message.tool_result(b, "2"),
    ]
    provider = build("anthropic")
    provider.complete(system=SYSTEM, messages=history)
    messages = fake_llm.requests[0].body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"][0] == {"type": "text", "text": "Checking."}
    assert messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "1"},
        {"type": "tool_result", "tool_use_id": "t2", "content": "2"},
    ]


def test_anthropic_tool_use_with_text(fake_llm: FakeLLM, build: Callable[..., Any]) -> None:
    body = anthropic_tool_use("recall", {"query": "a"}, call_id="t1", text="Checking.")
    fake_llm.enqueue(MESSAGES, body=body)
    provider = build("anthropic")
    reply = provider.complete(system=SYSTEM, messages=[Message.user("q")], tools=[RECALL])
    assert reply.text == "Checking."
    assert reply.tool_calls == [ToolCall("t1", "recall", {"query": "a"})]
    assert reply.stop_reason == "tool_use"


# --- errors ----------------------------------------------------------------


def _error(provider: Any) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        provider.complete(system=SYSTEM, messages=[Message.user("hi")])
    assert KEY not in str(caught.value)
    return caught.value


def test_rate_limit_carries_retry_after(fake_llm: FakeLLM, flavour: Flavour, make: Any) -> None:
    fake_llm.enqueue_error(flavour.path, 429, "slow down", headers={"Retry-After": "7"})
    error = _error(make())
    assert (error.kind, error.retryable, error.retry_after) == ("rate_limit", True, 7.0)
    assert error.status == 429
    assert len(fake_llm.requests) == 1


def test_server_error_is_retryable(fake_llm: FakeLLM, flavour: Flavour, make: Any) -> None:
    fake_llm.enqueue_error(flavour.path, 500, "boom")
    error = _error(make())
    assert (error.kind, error.retryable, error.retry_after) == ("server", True, None)
    assert "boom" in str(error)


def test_auth_error_is_final_and_hides_the_key(
    fake_llm: FakeLLM, flavour: Flavour, make: Any
) -> None:
    # A server that echoes the key back must not get it into our message.
    fake_llm.enqueue_error(flavour.path, 401, f"Incorrect API key provided: {KEY}")
    error = _error(make())
    assert (error.kind, error.retryable) == ("auth", False)
    assert "Incorrect API key provided: ***" in str(error)


def test_forbidden_is_auth(fake_llm: FakeLLM, flavour: Flavour, make: Any) -> None:
    fake_llm.enqueue_error(flavour.path, 403, "no access to this model")
    error = _error(make())
    assert (error.kind, error.retryable, error.status) == ("auth", False, 403)


def test_bad_request_is_final(fake_llm: FakeLLM, flavour: Flavour, make: Any) -> None:
    fake_llm.enqueue_error(flavour.path, 400, "max_tokens: too large")
    error = _error(make())
    assert (error.kind, error.retryable) == ("bad_request", False)
    assert "max_tokens: too large" in str(error)


def test_timeout(fake_llm: FakeLLM, flavour: Flavour, make: Any) -> None:
    # The reply would come after 2 s: getting "timeout" (not "late") is the proof.
    fake_llm.enqueue(flavour.path, body=flavour.text("late"), delay=2.0)
    error = _error(make(timeout=0.2))
    assert (error.kind, error.retryable) == ("timeout", True)
    assert len(fake_llm.requests_to(flavour.path)) == 1  # asked once, not retried


def test_refused_connection(flavour: Flavour, make: Any) -> None:
    error = _error(make(f"http://127.0.0.1:{closed_port()}"))
    assert (error.kind, error.retryable) == ("connection", True)


def test_sdk_retries_then_succeeds(fake_llm: FakeLLM, flavour: Flavour, make: Any) -> None:
    # retry-after-ms keeps the SDK's back-off to a millisecond.
    fake_llm.enqueue_error(flavour.path, 503, "busy", headers={"retry-after-ms": "1"})
    fake_llm.enqueue(flavour.path, body=flavour.text("ok"))
    reply = make(max_retries=1).complete(system=SYSTEM, messages=[Message.user("hi")])
    assert reply.text == "ok"
    assert len(fake_llm.requests) == 2


def test_malformed_tool_arguments_are_a_retryable_error(
    fake_llm: FakeLLM, build: Callable[..., Any]
) -> None:
    body = chat_tool_call("recall", {})
    body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = "{not json"
    fake_llm.enqueue(CHAT, body=body)
    provider = build("chat")
    error = _error(provider)
    assert (error.kind, error.retryable) == ("server", True)
    assert "recall" in str(error)


@pytest.mark.parametrize("cls", [OpenAIProvider, AnthropicProvider])
def test_missing_key_is_config(cls: Any) -> None:
    with pytest.raises(ProviderError) as caught:
        cls(model="m")
    assert (caught.value.kind, caught.value.retryable) == ("config", False)


def test_keys_and_base_urls_come_from_the_environment(
    fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY + "-a")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_llm.anthropic_base_url)
    fake_llm.enqueue(RESPONSES, body=openai_text("o"))
    fake_llm.enqueue(MESSAGES, body=anthropic_text("a"))
    for name in ("openai", "anthropic"):
        provider = provider_from_config(
            {"CHATMEM_PROVIDER": name, "CHATMEM_PROVIDER_MAX_RETRIES": 0}
        )
        try:
            provider.complete(system=SYSTEM, messages=[Message.user("hi")])
        finally:
            provider.close()  # type: ignore[attr-defined]
    openai_request, anthropic_request = fake_llm.requests
    assert openai_request.body["model"] == DEFAULT_OPENAI_MODEL
    assert openai_request.headers["authorization"] == f"Bearer {KEY}"
    assert anthropic_request.body["model"] == DEFAULT_ANTHROPIC_MODEL
    assert anthropic_request.headers["authorization"] == f"Bearer {KEY}-a"


# --- configuration ---------------------------------------------------------


def test_default_is_offline() -> None:
    provider = provider_from_config({})
    assert isinstance(provider, OfflineProvider)
    assert is_offline(provider)
    assert provider.name == "none"
    with pytest.raises(ProviderError) as caught:
        provider.complete(system="", messages=[Message.user("hi")])
    assert (caught.value.kind, caught.value.retryable) == ("config", False)
    assert "no LLM provider is configured" in str(caught.value)


@pytest.mark.parametrize(
    "config",
    [
        {"CHATMEM_PROVIDER": "gemini"},
        {"CHATMEM_PROVIDER": "openai", "CHATMEM_OPENAI_API": "completions"},
        {"CHATMEM_PROVIDER": "openai", "CHATMEM_PROVIDER_TIMEOUT": "soon"},
        {"CHATMEM_PROVIDER": "anthropic", "CHATMEM_PROVIDER_MAX_RETRIES": -1},
    ],
)
def test_bad_settings_are_config_errors(
    config: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with pytest.raises(ProviderError) as caught:
        provider_from_config(config)
    assert caught.value.kind == "config"


def test_config_reaches_the_client(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    provider = provider_from_config(
        {
            "CHATMEM_PROVIDER": "OpenAI",
            "CHATMEM_MODEL": "my-model",
            "CHATMEM_OPENAI_API": "chat",
            "CHATMEM_PROVIDER_TIMEOUT": "3.5",
            "CHATMEM_PROVIDER_MAX_RETRIES": "0",
        }
    )
    assert isinstance(provider, OpenAIProvider)
    try:
        assert (provider.model, provider.api) == ("my-model", "chat")
        assert provider._client.timeout == 3.5
        assert provider._client.max_retries == 0
    finally:
        provider.close()


def test_defaults_table_covers_every_key() -> None:
    assert set(DEFAULTS) == {
        "CHATMEM_PROVIDER",
        "CHATMEM_MODEL",
        "CHATMEM_OPENAI_API",
        "CHATMEM_PROVIDER_TIMEOUT",
        "CHATMEM_PROVIDER_MAX_RETRIES",
    }
    assert DEFAULTS["CHATMEM_PROVIDER"][0] == "none"
    assert DEFAULTS["CHATMEM_PROVIDER_TIMEOUT"][0] == 20.0
    assert DEFAULTS["CHATMEM_PROVIDER_MAX_RETRIES"][0] == 1
    assert all(meaning for _, meaning in DEFAULTS.values())


def test_sdks_are_imported_only_when_chosen() -> None:
    code = (
        "import sys\n"
        "from chatmem.providers import provider_from_config\n"
        "provider_from_config({'CHATMEM_PROVIDER': 'none'})\n"
        "print(sorted(m for m in ('openai', 'anthropic', 'httpx2') if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "raw",
    ["{", "[" * 5000 + "]" * 5000, '{"n": ' + "1" * 5000 + "}"],
    ids=["cut short", "nested 5,000 deep", "5,000 digits"],
)
def test_garbled_model_arguments_are_a_retryable_provider_error(raw: str) -> None:
    from chatmem.providers import ProviderError
    from chatmem.providers.base import decode_arguments

    with pytest.raises(ProviderError) as caught:
        decode_arguments(raw, tool="get-post")
    assert (caught.value.kind, caught.value.retryable) == ("server", True)
    assert "not valid JSON" in str(caught.value)
