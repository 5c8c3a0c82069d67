"""chatmem: human-approved project memory for AI chat products (a Flask extension)."""

from .errors import (
    ApprovalRequired,
    BlockedByMemory,
    ChatmemError,
    Conflict,
    Forbidden,
    InvalidParams,
    MemoryDisabled,
    NotFound,
    PayloadTooLarge,
    ProviderFailed,
    RateLimited,
    ToolFailed,
    Unauthorized,
    Unavailable,
)
from .extension import ChatMemory
from .tools import CallContext, Tool

__all__ = [
    "ApprovalRequired",
    "BlockedByMemory",
    "CallContext",
    "ChatMemory",
    "ChatmemError",
    "Conflict",
    "Forbidden",
    "InvalidParams",
    "MemoryDisabled",
    "NotFound",
    "PayloadTooLarge",
    "ProviderFailed",
    "RateLimited",
    "Tool",
    "ToolFailed",
    "Unauthorized",
    "Unavailable",
]
