"""What a user may type besides prose: `/tool NAME {json}` and `/help`, and how a call is kept.

A `/tool` command runs one tool by name, with no model involved; `/help`
lists the tools this user may call, with their arguments. A call's
arguments are kept and shown with the tool's writeOnly fields hidden (a
password is "[hidden]"), in the transcript as in the conversation's record.
"""

from __future__ import annotations

import json
import re
from typing import Any

from chatmem import InvalidParams
from chatmem.inputs import parse_json

from .extensions import memory
from .models import User

TOOL_COMMAND = re.compile(r"^/tool(?:\s+(?P<name>\S+))?(?:\s+(?P<args>.*))?$", re.DOTALL)
TOOL_USAGE = 'Usage: /tool <name> <json arguments>, e.g. /tool get-post {"post_id": 1}'


def help_text(user: User, *, read_only: bool = False) -> str:
    """`/help`: the syntax, then the tools this user may call, each with its arguments.

    Written in sections ("## " headings, "- " items) that the chat page draws
    as headings and lists: one paragraph of every tool was a wall of text.
    """
    tools = memory.visible_tools(user, read_only=read_only)
    lines = [
        "## Run a tool",
        TOOL_USAGE.removeprefix("Usage: "),
        "Arguments marked ? are optional.",
    ]
    for heading, of_memory in (("Site tools", False), ("Project memory tools", True)):
        listed = [t for t in tools if t.memory is of_memory]
        if listed:
            lines += ["", f"## {heading}", *(_tool_line(t) for t in listed)]
    lines += ["", "## Commands", "- /help: this list", "- /tool <name> <json>: run one tool"]
    return "\n".join(lines)


def _tool_line(tool: Any) -> str:
    schema = tool.input_schema
    required = set(schema.get("required", ()))
    arguments = ", ".join(
        f"{name}{'' if name in required else '?'}: {_type_of(field)}"
        for name, field in schema.get("properties", {}).items()
    )
    return f"- {tool.name} {{{arguments}}}: {tool.description}"


def _type_of(field: dict[str, Any]) -> str:
    if "enum" in field:
        return " | ".join(json.dumps(value) for value in field["enum"])
    kind = field.get("type", "any")
    return " | ".join(kind) if isinstance(kind, list) else str(kind)


def concealed(name: str, arguments: Any) -> Any:
    """A call's arguments as the chat keeps and shows them (a password is "[hidden]")."""
    tool = memory.registry.find(name, memory.server_name)
    return tool.conceal(arguments) if tool is not None else arguments


def concealed_command(name: str | None, raw_args: str | None) -> str | None:
    """`/tool NAME {...}` rewritten with its hidden fields, or None when none are hidden."""
    try:
        arguments = parse_json(raw_args, values=False) if name and raw_args else None
    except InvalidParams:  # not bounded JSON: tool_command says so
        return None
    if not isinstance(arguments, dict) or not name:
        return None
    hidden = concealed(name, arguments)
    if hidden == arguments:
        return None
    return f"/tool {name} {json.dumps(hidden, ensure_ascii=False)}"
