"""Memory as MCP resources and a prompt (both protocol eras).

- `chatmem://memory/block`: the `## Project memory` block, exactly as a new
  conversation gets it (the same text as `instructions`);
- `chatmem://guidance/{id}`: one approved, enabled entry, as `recall`
  returns it (a template: there may be thousands, so they are not listed);
- the `start-task` prompt: the block, and the instruction to call `recall`
  before acting.

What an agent may read here is what `recall` gives it, so reading (and
`prompts/get`) needs `recall`'s capability, and nothing is read while Memory
is off; the lists are the same for every caller, and never change, so there
is no `notifications/resources/list_changed`. What a resource holds does
change: a client subscribes to it (`subscriptions.py`). A 2026-07-28 client
may keep the lists for an hour (`public`: they are the same for everyone) and
a read as `rpc.memory_ttl_ms` says.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from ...errors import Forbidden, MemoryDisabled
from . import rpc
from .params import START_TASK

if TYPE_CHECKING:
    from .params import PageParams, PromptParams, ReadParams
    from .rpc import Caller

BLOCK_URI = "chatmem://memory/block"
GUIDANCE_TEMPLATE = "chatmem://guidance/{id}"
_GUIDANCE_URI = re.compile(r"chatmem://guidance/([1-9][0-9]{0,17})")
# A resource that does not exist: MCP's own code until 2026-07-28 standardised on
# Invalid Params (SEP-2164).
RESOURCE_NOT_FOUND = {False: -32002, True: rpc.INVALID_PARAMS}

BLOCK_RESOURCE = {
    "uri": BLOCK_URI,
    "name": "project-memory",
    "title": "Project memory",
    "description": "The approved project memory every new conversation starts with.",
    "mimeType": "text/markdown",
}
GUIDANCE_RESOURCE_TEMPLATE = {
    "uriTemplate": GUIDANCE_TEMPLATE,
    "name": "guidance-entry",
    "title": "Approved guidance entry",
    "description": "One approved, enabled guidance entry by id, as recall returns it.",
    "mimeType": "application/json",
}
START_TASK_PROMPT = {
    "name": START_TASK,
    "title": "Start a task with project memory",
    "description": "The site's approved project memory, and the reminder to call recall "
    "for the topic before changing anything.",
    "arguments": [{"name": "task", "description": "What you are about to do.", "required": False}],
}


def list_resources(caller: Caller, params: PageParams) -> dict[str, Any]:
    return rpc.cached(caller, {"resources": [BLOCK_RESOURCE]}, rpc.LISTS_TTL_MS, "public")


def list_templates(caller: Caller, params: PageParams) -> dict[str, Any]:
    templates = {"resourceTemplates": [GUIDANCE_RESOURCE_TEMPLATE]}
    return rpc.cached(caller, templates, rpc.LISTS_TTL_MS, "public")


def list_prompts(caller: Caller, params: PageParams) -> dict[str, Any]:
    return rpc.cached(caller, {"prompts": [START_TASK_PROMPT]}, rpc.LISTS_TTL_MS, "public")


def may_read(caller: Caller) -> None:
    """Reading needs recall's capability and Memory on (the lists say nothing, so need neither)."""
    memory = caller.memory
    recall = memory.registry.find("recall", memory.server_name)
    if recall is None or not memory.can(caller.user, recall.capability):
        raise Forbidden(
            "Reading project memory needs the capability of the recall tool.",
            details={"capability": recall.capability if recall else None},
        )
    if not memory.snapshot().memory_enabled:
        raise MemoryDisabled("Project memory is switched off on this site.")


def read(caller: Caller, params: ReadParams) -> dict[str, Any]:
    uri = params.uri
    memory = caller.memory
    if uri == BLOCK_URI:
        contents = {"uri": uri, "mimeType": "text/markdown", "text": memory.system_context()}
    else:
        entry = _approved_entry(caller, uri)
        if entry is None:
            code = RESOURCE_NOT_FOUND[caller.modern]
            raise rpc.RpcError(code, "Resource not found", {"uri": uri[:300]})
        text = json.dumps(entry, ensure_ascii=False)
        contents = {"uri": uri, "mimeType": "application/json", "text": text}
    return rpc.cached(caller, {"contents": [contents]}, rpc.memory_ttl_ms(caller))


def _approved_entry(caller: Caller, uri: str) -> dict[str, Any] | None:
    found = _GUIDANCE_URI.fullmatch(uri)
    if found is None:
        return None
    wanted = int(found[1])
    # The per-revision cache: approved, enabled, already through the text rules.
    approved = caller.memory.approved_guidance(caller.memory.snapshot())
    return next((entry for entry in approved.items if entry["id"] == wanted), None)


def get_prompt(caller: Caller, params: PromptParams) -> dict[str, Any]:
    block = caller.memory.system_context() or "(No approved project memory yet.)"
    lines = [
        block,
        "",
        "Before you change anything, call the `recall` tool with a topic from this task, "
        "and follow what it returns. Propose durable lessons with `remember`; a person "
        "approves them.",
    ]
    if params.task.strip():
        lines += ["", f"Task: {params.task.strip()}"]
    message = {"role": "user", "content": {"type": "text", "text": "\n".join(lines)}}
    return rpc.complete(
        caller, {"description": START_TASK_PROMPT["description"], "messages": [message]}
    )
