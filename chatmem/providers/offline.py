"""The provider used when none is configured.

chatmem must run without any LLM: summaries fall back to the digest and the
demo chat to `/tool` commands. Making "no provider" an object that fails
like a real one lets callers keep a single `except ProviderError` path.
"""

from __future__ import annotations

from collections.abc import Sequence

from chatmem.providers.base import Message, Provider, ProviderError, Reply, ToolSpec


class OfflineProvider:
    """A Provider that never calls anything; `complete` always raises `config`."""

    name = "none"
    model = ""

    def complete(
        self,
        *,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        max_output_tokens: int = 1024,
    ) -> Reply:
        raise ProviderError(
            "no LLM provider is configured (set CHATMEM_PROVIDER to 'openai' or "
            "'anthropic'); summaries are digest only",
            kind="config",
            retryable=False,
        )

    def close(self) -> None:
        """Nothing to release; present so every provider can be closed alike."""


def is_offline(provider: Provider) -> bool:
    """Whether calling `provider` is pointless, so callers can skip straight to a fallback."""
    return isinstance(provider, OfflineProvider)
