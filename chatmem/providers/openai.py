"""OpenAI (and OpenAI-compatible servers) through the official `openai` SDK.

The Responses API is the default because OpenAI recommends it for new work;
`api="chat"` switches to Chat Completions for compatible servers (local
model runners, proxies) that never implemented Responses.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from chatmem.providers.base import (
    STOP_CONTENT_FILTER,
    STOP_END,
    STOP_MAX_TOKENS,
    STOP_TOOL_USE,
    Message,
    ProviderError,
    Reply,
    ToolCall,
    ToolSpec,
    Usage,
    decode_arguments,
    map_sdk_error,
)

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionFunctionToolParam, ChatCompletionMessageParam
    from openai.types.responses import FunctionToolParam, ResponseInputParam

OpenAIApi = Literal["responses", "chat"]

_CHAT_STOP = {
    "stop": STOP_END,
    "tool_calls": STOP_TOOL_USE,
    "function_call": STOP_TOOL_USE,
    "length": STOP_MAX_TOKENS,
    "content_filter": STOP_CONTENT_FILTER,
}
_RESPONSES_INCOMPLETE = {
    "max_output_tokens": STOP_MAX_TOKENS,
    "content_filter": STOP_CONTENT_FILTER,
}


class OpenAIProvider:
    """A Provider backed by `openai.OpenAI`.

    The key is checked here rather than left to the SDK so that a missing key
    is a `config` ProviderError like every other setup mistake.
    """

    name = "openai"

    def __init__(
        self,
        *,
        model: str,
        api: str = "responses",
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 20.0,
        max_retries: int = 1,
    ) -> None:
        if api not in ("responses", "chat"):
            raise ProviderError(
                f"CHATMEM_OPENAI_API must be 'responses' or 'chat', not {api!r}", kind="config"
            )
        try:
            import openai
        except ImportError as exc:
            raise ProviderError(
                "the openai package is not installed (pip install openai)", kind="config"
            ) from exc
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            raise ProviderError(
                "no OpenAI API key: set OPENAI_API_KEY (any non-empty value for a local "
                "server that needs none)",
                kind="config",
            )
        self.model = model
        self.api: OpenAIApi = "chat" if api == "chat" else "responses"
        self._sdk: Any = openai
        self._key = key
        # base_url=None lets the SDK read OPENAI_BASE_URL itself.
        self._client = openai.OpenAI(
            api_key=key, base_url=base_url, timeout=timeout, max_retries=max_retries
        )

    def complete(
        self,
        *,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        max_output_tokens: int = 1024,
    ) -> Reply:
        try:
            if self.api == "chat":
                return self._complete_chat(system, messages, tools, max_output_tokens)
            return self._complete_responses(system, messages, tools, max_output_tokens)
        except self._sdk.OpenAIError as exc:
            raise map_sdk_error(
                exc, sdk=self._sdk, provider=self.name, secrets=[self._key]
            ) from exc

    def close(self) -> None:
        """Release pooled connections; a long-lived app never needs to."""
        self._client.close()

    # --- Responses API -------------------------------------------------

    def _complete_responses(
        self,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        max_output_tokens: int,
    ) -> Reply:
        kwargs: dict[str, Any] = {}
        if system:
            kwargs["instructions"] = system
        if tools:
            kwargs["tools"] = [_responses_tool(t) for t in tools]
        # store=False: memory content must not be kept server-side for 30 days.
        response = self._client.responses.create(
            model=self.model,
            input=_responses_input(messages),
            max_output_tokens=max_output_tokens,
            store=False,
            **kwargs,
        )
        if not isinstance(response, self._sdk.types.responses.Response):
            raise _unreadable(self.name)
        calls = [
            ToolCall(item.call_id, item.name, decode_arguments(item.arguments, tool=item.name))
            for item in response.output
            if item.type == "function_call"
        ]
        if calls:
            stop = STOP_TOOL_USE
        elif response.status == "incomplete" and response.incomplete_details is not None:
            reason = response.incomplete_details.reason or "incomplete"
            stop = _RESPONSES_INCOMPLETE.get(reason, reason)
        else:
            stop = STOP_END
        usage = response.usage
        return Reply(
            text=response.output_text,
            tool_calls=calls,
            stop_reason=stop,
            usage=Usage(usage.input_tokens, usage.output_tokens) if usage else Usage(),
        )

    # --- Chat Completions ----------------------------------------------

    def _complete_chat(
        self,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        max_output_tokens: int,
    ) -> Reply:
        kwargs: dict[str, Any] = {}
        if tools:
            kwargs["tools"] = [_chat_tool(t) for t in tools]
        completion = self._client.chat.completions.create(
            model=self.model,
            messages=_chat_messages(system, messages),
            max_completion_tokens=max_output_tokens,
            **kwargs,
        )
        if not isinstance(completion, self._sdk.types.chat.ChatCompletion):
            raise _unreadable(self.name)
        if not completion.choices:
            raise ProviderError(f"{self.name}: the server returned no choices", kind="server")
        choice = completion.choices[0]
        calls = [
            ToolCall(
                call.id,
                call.function.name,
                decode_arguments(call.function.arguments, tool=call.function.name),
            )
            for call in choice.message.tool_calls or []
            if call.type == "function"
        ]
        finish = choice.finish_reason or ""
        stop = STOP_TOOL_USE if calls else _CHAT_STOP.get(finish, finish or STOP_END)
        usage = completion.usage
        return Reply(
            text=choice.message.content or "",
            tool_calls=calls,
            stop_reason=stop,
            usage=Usage(usage.prompt_tokens, usage.completion_tokens) if usage else Usage(),
        )


def _unreadable(provider: str) -> ProviderError:
    # Without strict validation the SDK hands back whatever JSON came (a bare
    # string, say): a server that answers 200 with that has failed.
    return ProviderError(f"{provider}: unreadable response: not an API answer", kind="server")


def _responses_tool(tool: ToolSpec) -> FunctionToolParam:
    # strict=False: host schemas are not written to strict mode's rules
    # (every property required, no additionalProperties), and the SDK marks
    # the field required.
    return {
        "type": "function",
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.input_schema,
        "strict": False,
    }


def _responses_input(messages: Sequence[Message]) -> ResponseInputParam:
    """Stateless input items: earlier tool calls are echoed back as plain dicts.

    Plain dicts, not the SDK's output objects, because with store=False the
    server cannot resolve ids of items it never kept (reasoning items).
    """
    items: ResponseInputParam = []
    for message in messages:
        if message.role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.tool_call_id or "",
                    "output": message.content,
                }
            )
            continue
        if message.text or not message.tool_calls:
            items.append({"role": message.role, "content": message.text})
        for call in message.tool_calls:
            items.append(
                {
                    "type": "function_call",
                    "call_id": call.id,
                    "name": call.name,
                    "arguments": json.dumps(call.arguments),
                }
            )
    return items


def _chat_tool(tool: ToolSpec) -> ChatCompletionFunctionToolParam:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.input_schema,
        },
    }


def _chat_messages(system: str, messages: Sequence[Message]) -> list[ChatCompletionMessageParam]:
    # "system", not "developer": compatible servers know the older role, and
    # OpenAI itself still accepts it.
    out: list[ChatCompletionMessageParam] = (
        [{"role": "system", "content": system}] if system else []
    )
    for message in messages:
        if message.role == "tool":
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": message.tool_call_id or "",
                    "content": message.content,
                }
            )
        elif message.role == "assistant" and message.tool_calls:
            out.append(
                {
                    "role": "assistant",
                    "content": message.text or None,
                    "tool_calls": [
                        {
                            "id": call.id,
                            "type": "function",
                            "function": {
                                "name": call.name,
                                "arguments": json.dumps(call.arguments),
                            },
                        }
                        for call in message.tool_calls
                    ],
                }
            )
        elif message.role == "assistant":
            out.append({"role": "assistant", "content": message.text})
        else:
            out.append({"role": "user", "content": message.text})
    return out
