"""Tools as data, the registry, and the validation every call's arguments pass.

chatmem's own memory tools are registered here exactly like a host's tools;
`dispatch.py` is the path every call then takes.
"""

from __future__ import annotations

import inspect
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jsonschema import Draft202012Validator

from . import inputs, text
from .errors import (
    InvalidParams,
)
from .identity import HostUser
from .json_schema import describe_error
from .tool_names import tool_slug

if TYPE_CHECKING:
    from .settings import Settings

log = logging.getLogger("chatmem")

NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
# At most 19 digits: longer text is no 64-bit integer (and Python refuses to
# convert over 4,300 digits); the schema then says it is not an integer.
_INTEGER_TEXT = re.compile(r"\s*[+]?\d{1,19}\s*")


@dataclass
class CallContext:
    """Who is calling, from where, in which session; handed to tools that ask.

    Narrow on purpose: the caller, the channel, the session and the app's
    (frozen, read-only) settings; never the whole ChatMemory. chatmem's own
    memory tools get their few collaborators when they are registered
    (`memory/services.py`), not through this.
    """

    user: HostUser
    user_id: str
    user_name: str
    channel: str
    settings: Settings
    session_id: str | None = None
    # A client's own name for its session (a REST `X-Chatmem-Session` header,
    # an MCP token's calls): the dispatcher finds or starts the session.
    session_key: str | None = None
    # The caller's scope is read-only (a read-only API token): only read-only
    # tools may run. Checked here, so every channel gets it from one place.
    read_only: bool = False


@dataclass(frozen=True)
class Tool:
    """A tool is data: a name, a description, JSON Schemas and a function.

    The function receives the validated arguments as keyword arguments, plus
    `context` (a CallContext) when it declares a parameter of that name.
    `written_text` names the fields whose text is stored for people and agents
    to read (`takeaways/*/text` for a field of each list item) and what
    happens to a secret in each (see `chatmem.text.check_field`).
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    func: Callable[..., Any]
    read_only: bool = False
    output_schema: dict[str, Any] | None = None
    capability: str = "edit_posts"
    memory: bool = False
    title: str | None = None
    written_text: Mapping[str, text.Secrets] = field(default_factory=dict)
    wants_context: bool = field(init=False, default=False)
    # The argument names the function takes (None: it takes **kwargs, so any).
    takes: frozenset[str] | None = field(init=False, default=None)
    validator: Draft202012Validator = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not NAME_PATTERN.fullmatch(self.name):
            raise ValueError(
                f"Tool name {self.name!r} must match {NAME_PATTERN.pattern}: MCP clients and "
                "the OpenAI and Anthropic APIs refuse other names."
            )
        if self.input_schema.get("type") != "object":
            raise ValueError(f"Tool {self.name!r}: input_schema must have type 'object'.")
        Draft202012Validator.check_schema(self.input_schema)
        object.__setattr__(self, "validator", Draft202012Validator(self.input_schema))
        params = inspect.signature(self.func).parameters
        object.__setattr__(self, "wants_context", "context" in params)
        if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
            object.__setattr__(self, "takes", frozenset(params) - {"context"})

    def conceal(self, arguments: Any) -> Any:
        """The arguments as they may be kept or shown: `writeOnly` fields hidden."""
        return conceal(self.input_schema, arguments)

    def annotations(self) -> dict[str, Any]:
        """MCP annotations: hints for clients, derived from what we know."""
        hints: dict[str, Any] = {"readOnlyHint": self.read_only}
        if self.memory:
            hints["openWorldHint"] = False
        if self.title:
            hints["title"] = self.title
        return hints


# What a `writeOnly` argument (a password) is kept and shown as.
HIDDEN = "[hidden]"


def conceal(schema: Any, value: Any) -> Any:
    """`value` with every field its schema marks `"writeOnly": true` replaced by HIDDEN.

    JSON Schema's own word for "sent, never given back": the tool receives the
    value, while the change ledger, a digest and a host's chat transcript keep
    HIDDEN. Follows `properties` and `items`; other values are returned as they are.
    """
    if not isinstance(schema, dict):
        return value
    if schema.get("writeOnly") is True and value is not None:
        return HIDDEN
    if isinstance(value, dict) and isinstance(schema.get("properties"), dict):
        properties = schema["properties"]
        return {key: conceal(properties.get(key), item) for key, item in value.items()}
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [conceal(schema["items"], item) for item in value]
    return value


class ToolRegistry:
    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}

    def register(self, tool: Tool) -> Tool:
        if tool.name.lower() in (name.lower() for name in self._tools):
            raise ValueError(f"A tool named {tool.name!r} is already registered.")
        self._tools[tool.name] = tool
        return tool

    def find(self, name: str, server_name: str) -> Tool | None:
        """A tool by its name or full name (`<server>/<name>`)."""
        if not isinstance(name, str):
            return None
        if name in self._tools:
            return self._tools[name]
        slug = tool_slug(name, server_name)
        return next((t for t in self._tools.values() if t.name.lower() == slug), None)

    def tools(self, *, include_memory: bool = True) -> list[Tool]:
        """Registered tools in a stable order: memory tools first, then the host's."""
        listed = [t for t in self._tools.values() if include_memory or not t.memory]
        return sorted(listed, key=lambda t: (not t.memory, t.name))

    def visible_to(
        self, user: HostUser, permissions: Any, *, memory_enabled: bool, read_only: bool
    ) -> list[Tool]:
        """The tools this caller may call now: what tools/list, REST and the chat offer.

        Memory tools are hidden while Memory is off; a read-only caller sees
        read-only tools only (the dispatcher refuses the others anyway).
        """
        return [
            t
            for t in self.tools(include_memory=memory_enabled)
            if permissions.can(user, t.capability) and (t.read_only or not read_only)
        ]


def canonical_arguments(schema: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """Coerce integer-typed inputs sent as numeric text ("042", " 42") or 42.0.

    Doing this before validation means a guardrail on post 42 sees one
    spelling, and the tool acts on exactly what the guardrail checked.
    """
    properties = schema.get("properties") or {}
    out = dict(arguments)
    for key, value in arguments.items():
        declared = (properties.get(key) or {}).get("type")
        types = declared if isinstance(declared, list) else [declared]
        if "integer" not in types or isinstance(value, bool):
            continue
        if isinstance(value, str) and _INTEGER_TEXT.fullmatch(value):
            out[key] = int(value.strip())
        elif isinstance(value, float) and value.is_integer():
            out[key] = int(value)
    return out


def validate(tool: Tool, arguments: Any) -> dict[str, Any]:
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise InvalidParams("Tool arguments must be a JSON object.", details={"field": "arguments"})
    args = canonical_arguments(tool.input_schema, arguments)
    # NUL, lone surrogates, NaN, out-of-range integers, absurd nesting: refused
    # here for every channel, the Python one included, before any write.
    inputs.check_value(args, field="")
    if tool.written_text:
        # Before the schema, so its length limits apply to the normalised text.
        args = apply_text_rules(args, tool.written_text)
    errors = sorted(tool.validator.iter_errors(args), key=lambda e: list(e.absolute_path))
    if errors:
        field_name, message = describe_error(errors[0])
        raise InvalidParams(message, details={"field": field_name})
    # A schema that allows more properties than the function takes must not
    # turn a client's extra field into the tool's TypeError (a 500).
    extra = sorted(set(args) - tool.takes) if tool.takes is not None else []
    if extra:
        raise InvalidParams(f"{extra[0]} is not an accepted field.", details={"field": extra[0]})
    return args


def apply_text_rules(args: dict[str, Any], rules: Mapping[str, text.Secrets]) -> dict[str, Any]:
    """Each written field through `text.check_field`; the error names the field.

    Values of the wrong type are left to the schema, which runs next.
    """
    out = dict(args)
    for path, secrets in rules.items():
        name, _, item_field = path.partition("/*/")
        if not item_field and isinstance(out.get(name), str):
            out[name] = text.check_field(name, out[name], secrets=secrets)
        elif item_field and isinstance(out.get(name), list):
            out[name] = items = [dict(i) if isinstance(i, dict) else i for i in out[name]]
            for index, item in enumerate(items):
                if isinstance(item, dict) and isinstance(item.get(item_field), str):
                    label = f"{name}/{index}/{item_field}"
                    item[item_field] = text.check_field(label, item[item_field], secrets=secrets)
    return out
