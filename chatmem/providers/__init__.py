"""LLM providers behind one small protocol, chosen by configuration.

Only the SDK of the chosen provider is imported, so a host that runs with
`CHATMEM_PROVIDER = "none"` (the default) never pays for, or needs, either SDK.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chatmem.providers.base import (
    Message,
    Provider,
    ProviderError,
    Reply,
    ToolCall,
    ToolSpec,
    Usage,
)
from chatmem.providers.offline import OfflineProvider, is_offline

__all__ = [
    "DEFAULTS",
    "DEFAULT_ANTHROPIC_MODEL",
    "DEFAULT_OPENAI_MODEL",
    "Message",
    "OfflineProvider",
    "Provider",
    "ProviderError",
    "Reply",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "is_offline",
    "provider_from_config",
]

# Cheap, fast models suited to 2-4 sentence summaries and short tool loops
# (see shared/research/llm-providers.md §5). Override with CHATMEM_MODEL.
DEFAULT_OPENAI_MODEL = "gpt-6-luna"
DEFAULT_ANTHROPIC_MODEL = "claude-haiku-4-5"

DEFAULTS: dict[str, tuple[object, str]] = {
    "CHATMEM_PROVIDER": ("none", "LLM provider: 'openai', 'anthropic' or 'none' (digest only)"),
    "CHATMEM_MODEL": (
        None,
        f"model name; unset means {DEFAULT_OPENAI_MODEL} (openai) or "
        f"{DEFAULT_ANTHROPIC_MODEL} (anthropic)",
    ),
    "CHATMEM_OPENAI_API": (
        "responses",
        "OpenAI API: 'responses', or 'chat' for compatible servers without Responses",
    ),
    "CHATMEM_PROVIDER_TIMEOUT": (20.0, "seconds before one provider request is abandoned"),
    "CHATMEM_PROVIDER_MAX_RETRIES": (1, "SDK retries on timeouts, 429 and 5xx before giving up"),
}


def provider_from_config(config: Mapping[str, Any]) -> Provider:
    """Build the configured provider; a bad setting is a `config` ProviderError.

    Keys missing from `config` (or set to None) take their DEFAULTS. API keys
    and base URLs are left to the SDKs' own environment variables.
    """
    name = str(_setting(config, "CHATMEM_PROVIDER")).strip().lower()
    if name == "none":
        return OfflineProvider()
    if name not in ("openai", "anthropic"):
        raise ProviderError(
            f"CHATMEM_PROVIDER must be 'openai', 'anthropic' or 'none', not {name!r}",
            kind="config",
        )
    model = _setting(config, "CHATMEM_MODEL") or (
        DEFAULT_OPENAI_MODEL if name == "openai" else DEFAULT_ANTHROPIC_MODEL
    )
    timeout = _number(config, "CHATMEM_PROVIDER_TIMEOUT", float)
    max_retries = int(_number(config, "CHATMEM_PROVIDER_MAX_RETRIES", int))
    if timeout <= 0 or max_retries < 0:
        raise ProviderError(
            "CHATMEM_PROVIDER_TIMEOUT must be positive and CHATMEM_PROVIDER_MAX_RETRIES "
            "not negative",
            kind="config",
        )
    if name == "openai":
        from chatmem.providers.openai import OpenAIProvider

        return OpenAIProvider(
            model=str(model),
            api=str(_setting(config, "CHATMEM_OPENAI_API")).strip().lower(),
            timeout=timeout,
            max_retries=max_retries,
        )
    from chatmem.providers.anthropic import AnthropicProvider

    return AnthropicProvider(model=str(model), timeout=timeout, max_retries=max_retries)


def _setting(config: Mapping[str, Any], key: str) -> Any:
    value = config.get(key)
    return DEFAULTS[key][0] if value is None else value


def _number(config: Mapping[str, Any], key: str, kind: type[float] | type[int]) -> float:
    # Values may arrive as strings from environment-derived config.
    value = _setting(config, key)
    try:
        return kind(value)
    except (TypeError, ValueError) as exc:
        raise ProviderError(f"{key} must be a number, not {value!r}", kind="config") from exc
