"""Each MCP method's params, read and checked in one place.

A model's `parse(method, params)` gives the method's handler typed values,
or raises -32602 (Invalid params) with the message the client reads. The
transport has already made sure `params` is an object.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .rpc import INVALID_PARAMS, RpcError

TASK_MAX = 2000  # the start-task prompt's `task` argument
START_TASK = "start-task"


@dataclass(frozen=True)
class NoParams:
    """A method whose params (if any) change nothing: `ping`, `server/discover`."""

    @classmethod
    def parse(cls, method: str, params: Mapping[str, Any]) -> NoParams:
        return cls()


@dataclass(frozen=True)
class InitializeParams:
    """The handshake: any version is accepted here; the handler picks one it speaks."""

    protocol_version: Any = None

    @classmethod
    def parse(cls, method: str, params: Mapping[str, Any]) -> InitializeParams:
        return cls(protocol_version=params.get("protocolVersion"))


@dataclass(frozen=True)
class PageParams:
    """A `*/list` method: every list fits on one page, so no cursor we issued exists."""

    @classmethod
    def parse(cls, method: str, params: Mapping[str, Any]) -> PageParams:
        if params.get("cursor") is not None:
            raise RpcError(INVALID_PARAMS, f"Invalid cursor: {method} has a single page.")
        return cls()


@dataclass(frozen=True)
class CallParams:
    """`tools/call`: a tool's name and its arguments (an object; absent is empty)."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    #: Present when the client asks to wait on a task (MCP 2025-11-25): read by tasks.ttl_of.
    task: Any = None

    @classmethod
    def parse(cls, method: str, params: Mapping[str, Any]) -> CallParams:
        name = params.get("name")
        if not isinstance(name, str) or not name:
            raise RpcError(INVALID_PARAMS, "params.name must be the name of a tool.")
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise RpcError(INVALID_PARAMS, "params.arguments must be an object.")
        return cls(name=name, arguments=arguments, task=params.get("task"))


@dataclass(frozen=True)
class ReadParams:
    """`resources/read`: the URI of one resource."""

    uri: str

    @classmethod
    def parse(cls, method: str, params: Mapping[str, Any]) -> ReadParams:
        uri = params.get("uri")
        if not isinstance(uri, str) or not uri:
            raise RpcError(INVALID_PARAMS, "params.uri must be a resource URI.")
        return cls(uri=uri)


@dataclass(frozen=True)
class PromptParams:
    """`prompts/get`: the one prompt there is, and its optional `task` text."""

    task: str = ""

    @classmethod
    def parse(cls, method: str, params: Mapping[str, Any]) -> PromptParams:
        if params.get("name") != START_TASK:
            raise RpcError(INVALID_PARAMS, f"Unknown prompt: {str(params.get('name'))[:100]}")
        arguments = params.get("arguments") or {}
        task = arguments.get("task", "") if isinstance(arguments, dict) else None
        if not isinstance(task, str) or len(task) > TASK_MAX:
            raise RpcError(
                INVALID_PARAMS, f"arguments.task must be text of at most {TASK_MAX} characters."
            )
        return cls(task=task)
