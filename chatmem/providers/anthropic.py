"""Anthropic Claude through the official `anthropic` SDK (Messages API)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from chatmem.providers.base import (
    Message,
    ProviderError,
    Reply,
    ToolCall,
    ToolSpec,
    Usage,
    map_sdk_error,
)

if TYPE_CHECKING:
    from anthropic.types import (
        MessageParam,
        TextBlockParam,
        ToolResultBlockParam,
        ToolUseBlockParam,
    )

    _Block: TypeAlias = TextBlockParam | ToolUseBlockParam | ToolResultBlockParam


class AnthropicProvider:
    """A Provider backed by `anthropic.Anthropic`.

    The key is checked before the client is built: the SDK builds happily
    without one and only fails on the first request, with a `TypeError`, or
    silently picks up a profile from disk, neither of which a host expects.
    Passing the key explicitly also stops that profile discovery.

    No temperature/top_p/top_k is ever sent: the SDK no longer accepts them.
    """

    name = "anthropic"

    def __init__(
        self,
        *,
        model: str,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 20.0,
        max_retries: int = 1,
    ) -> None:
        try:
            import anthropic
        except ImportError as exc:
            raise ProviderError(
                "the anthropic package is not installed (pip install anthropic)", kind="config"
            ) from exc
        key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        token = None if key else os.environ.get("ANTHROPIC_AUTH_TOKEN")
        if not key and not token:
            raise ProviderError(
                "no Anthropic API key: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN)",
                kind="config",
            )
        self.model = model
        self._sdk: Any = anthropic
        self._secrets = [key, token]
        # An explicit timeout also skips the SDK's "streaming is required"
        # estimate, which would refuse large max_tokens without streaming.
        # base_url=None lets the SDK read ANTHROPIC_BASE_URL itself.
        self._client = anthropic.Anthropic(
            api_key=key,
            auth_token=token,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
        )

    def complete(
        self,
        *,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        max_output_tokens: int = 1024,
    ) -> Reply:
        kwargs: dict[str, Any] = {}
        if system:
            kwargs["system"] = system
        if tools:
            kwargs["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.input_schema}
                for t in tools
            ]
        try:
            response = self._client.messages.create(
                model=self.model,
                messages=_messages(messages),
                max_tokens=max_output_tokens,
                **kwargs,
            )
        except self._sdk.AnthropicError as exc:
            raise map_sdk_error(
                exc, sdk=self._sdk, provider=self.name, secrets=self._secrets
            ) from exc
        if not isinstance(response, self._sdk.types.Message):
            # Without strict validation the SDK hands back whatever JSON came.
            raise ProviderError(
                f"{self.name}: unreadable response: not an API answer", kind="server"
            )
        # Blocks are picked by type: thinking and other block kinds may come first.
        text = "".join(block.text for block in response.content if block.type == "text")
        calls = [
            ToolCall(block.id, block.name, dict(block.input))
            for block in response.content
            if block.type == "tool_use"
        ]
        usage = response.usage
        return Reply(
            text=text,
            tool_calls=calls,
            stop_reason=response.stop_reason or "",
            usage=Usage(usage.input_tokens, usage.output_tokens) if usage else Usage(),
        )

    def close(self) -> None:
        """Release pooled connections; a long-lived app never needs to."""
        self._client.close()


def _messages(messages: Sequence[Message]) -> list[MessageParam]:
    """Messages API turns; tool results ride in a user turn as tool_result blocks.

    Consecutive turns of one role are merged, which puts all results of one
    assistant turn into a single user message as the API requires.
    """
    turns: list[tuple[Literal["user", "assistant"], list[_Block]]] = []
    for message in messages:
        role: Literal["user", "assistant"] = "assistant" if message.role == "assistant" else "user"
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(_blocks(message))
        else:
            turns.append((role, _blocks(message)))
    out: list[MessageParam] = []
    for role, blocks in turns:
        if role == "assistant":
            out.append({"role": "assistant", "content": blocks})
        elif len(blocks) == 1 and blocks[0]["type"] == "text":
            # A lone text turn goes as a plain string, the API's simplest form.
            out.append({"role": "user", "content": blocks[0]["text"]})
        else:
            out.append({"role": "user", "content": blocks})
    return out


def _blocks(message: Message) -> list[_Block]:
    if message.role == "tool":
        return [
            {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id or "",
                "content": message.content,
            }
        ]
    blocks: list[_Block] = []
    # The API rejects empty text blocks, so a tool-call-only turn has none.
    if message.text or message.role == "user":
        blocks.append({"type": "text", "text": message.text})
    blocks.extend(
        {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
        for call in message.tool_calls
    )
    return blocks
