"""The chat turn loop: the model, and every tool call through chatmem.

Each user message goes to the configured provider with the tools the user
may call; every tool call the model makes (or a `/tool` command, see
`commands`) runs through `memory.call_tool`, so validation, capabilities,
guardrails and the ledger apply exactly as on every other channel. A refused
call is shown to the model as `{"error": {...}}` so it can explain or adapt.
A call an `ask` guardrail held is a "Waiting for approval" card
(`held_calls`). Conversations and their sessions are `conversations`'.
"""

from __future__ import annotations

import json
import logging
import secrets
from typing import Any

from flask import current_app

from chatmem import ChatmemError, InvalidParams
from chatmem.inputs import NotJson, json_safe, parse_json
from chatmem.providers import (
    Message,
    Provider,
    ProviderError,
    Reply,
    ToolCall,
    ToolSpec,
    is_offline,
    provider_from_config,
)
from chatmem.text import check_field

from .commands import TOOL_COMMAND, TOOL_USAGE, concealed, concealed_command, help_text
from .conversations import messages_of, require_open, short_title
from .extensions import db, memory
from .models import ChatMessage, Conversation, User

log = logging.getLogger("chatmem.demo")

CONTENT_MAX = 8000
_JSON_FIELDS = ("arguments", "result", "tool_calls")

NO_PROVIDER = (
    "No LLM provider is configured, so I can only run tools you name. "
    + TOOL_USAGE
    + ". To chat with a model, restart the demo with a provider, e.g. "
    "`CHATMEM_PROVIDER=openai OPENAI_API_KEY=sk-... chatmem-demo` (or --provider anthropic "
    "with ANTHROPIC_API_KEY set); any OpenAI-compatible server works through OPENAI_BASE_URL."
)


# How a refused call's card is drawn: an `ask` guardrail's hold is not a failure.
OUTCOME_OF = {"blocked_by_memory": "blocked", "approval_required": "held"}


# -- a turn -------------------------------------------------------------------


def post_message(
    conversation: Conversation, user: User, content: Any, *, read_only: bool = False
) -> list[ChatMessage]:
    """Run one user turn and return every message it added, in order.

    `read_only`: the turn comes with a read-only API token, so the model is
    offered, and may run, read-only tools only.
    """
    if not isinstance(content, str) or not content.strip():
        raise InvalidParams("content must be non-empty text.", details={"field": "content"})
    if len(content) > CONTENT_MAX:
        raise InvalidParams(
            f"content is longer than {CONTENT_MAX} characters.", details={"field": "content"}
        )
    # chatmem's text rules: nothing hidden reaches the model, the transcript or
    # a summary. A user may paste a secret into their own chat (its copies in
    # chatmem's tables are redacted), so only invisible text is refused here.
    content = check_field("content", content, secrets="keep")
    require_open(conversation)
    turn = Turn(conversation, user, read_only=read_only)
    command = TOOL_COMMAND.match(content.strip())
    # What the transcript keeps: a `/tool` command with its writeOnly fields hidden.
    shown = concealed_command(command["name"], command["args"]) if command else None
    turn.add(role="user", content=shown or content)
    if conversation.title == "New conversation":
        named = command["name"] if command else None
        conversation.title = f"Tool call: {named}" if named else short_title(shown or content)
    if content.strip() == "/help":
        turn.add(role="notice", content=help_text(user, read_only=read_only))
    elif command:
        turn.tool_command(command["name"], command["args"])
    else:
        turn.ask_model()
    return turn.added


def sentence(text: str) -> str:
    """`text` ending with exactly one full stop: an SDK's message often brings its own."""
    text = text.rstrip()
    return text if text.endswith((".", "!", "?")) else text + "."


def tool_specs(user: User, *, read_only: bool = False) -> list[ToolSpec]:
    """What the model is offered: the tools this user may call (memory ones only while on)."""
    return [
        ToolSpec(name=t.name, description=t.description, input_schema=t.input_schema)
        for t in memory.visible_tools(user, read_only=read_only)
    ]


class Turn:
    """One turn of a conversation: the messages it adds, each committed as it comes."""

    def __init__(self, conversation: Conversation, user: User, *, read_only: bool) -> None:
        self.conversation = conversation
        self.user = user
        self.read_only = read_only
        self.added: list[ChatMessage] = []

    def add(self, **fields: Any) -> ChatMessage:
        # Committed at once: a failing tool rolls the session back, and the
        # conversation so far must survive that.
        # A tool call may hold NaN, NUL or a lone surrogate (refused by the
        # dispatcher): its record keeps null and U+FFFD, which JSON columns take.
        safe = {k: json_safe(v) if k in _JSON_FIELDS else v for k, v in fields.items()}
        message = ChatMessage(conversation_id=self.conversation.id, **safe)
        db.session.add(message)
        db.session.commit()
        self.added.append(message)
        return message

    def tool_command(self, name: str | None, raw_args: str | None) -> None:
        raw_args = (raw_args or "").strip()
        if not name:
            self.add(role="notice", content=TOOL_USAGE)
            return
        try:
            # Bounded parse only: the values are the dispatcher's to refuse,
            # as a tool error naming the field, like on every other channel.
            arguments = parse_json(raw_args, field="arguments", values=False) if raw_args else {}
        except NotJson as exc:
            why = exc.message
            self.add(role="notice", content=f"Those arguments are not JSON ({why}) {TOOL_USAGE}")
            return
        if not isinstance(arguments, dict):
            self.add(role="notice", content=f"The arguments must be a JSON object. {TOOL_USAGE}")
            return
        call = ToolCall(id=f"cmd_{secrets.token_hex(6)}", name=name, arguments=arguments)
        self.add(role="assistant", tool_calls=[call_dict(call)])
        self.run_tool(call)

    def run_tool(self, call: ToolCall) -> ChatMessage:
        try:
            result = memory.call_tool(
                call.name,
                call.arguments,
                user=self.user,
                session_id=self.conversation.session_id or None,
                channel="chat",
                read_only=self.read_only,
            )
            outcome = "ok"
        except ChatmemError as error:
            result = {"error": error.to_dict()}
            outcome = OUTCOME_OF.get(error.code, "error")
        return self.add(
            role="tool",
            tool_call_id=call.id,
            tool_name=call.name,
            arguments=concealed(call.name, call.arguments),
            result=result,
            outcome=outcome,
        )

    def ask_model(self) -> None:
        try:
            provider = provider_from_config(memory.settings.provider.as_config())
        except ProviderError as error:
            log.warning("chat provider misconfigured: %s", error)
            self.add(
                role="notice", content=f"The LLM provider is misconfigured: {sentence(str(error))}"
            )
            return
        if is_offline(provider):
            self.add(role="notice", content=NO_PROVIDER)
            return
        try:
            self._loop(provider)
        finally:
            close = getattr(provider, "close", None)
            if callable(close):
                close()

    def _loop(self, provider: Provider) -> None:
        steps = int(current_app.config.get("DEMO_MAX_TOOL_STEPS", 8))
        specs = tool_specs(self.user, read_only=self.read_only)
        for _ in range(steps):
            reply = self._complete(provider, specs)
            if reply is None:
                return
            self.add(
                role="assistant",
                content=reply.text,
                tool_calls=[call_dict(c) for c in reply.tool_calls] or None,
            )
            if not reply.tool_calls:
                return
            for call in reply.tool_calls:
                self.run_tool(call)
        self.add(
            role="notice",
            content=f"I stopped after {steps} model steps without a final answer. "
            "Say 'continue' to let me go on.",
        )

    def _complete(self, provider: Provider, specs: list[ToolSpec]) -> Reply | None:
        try:
            reply = provider.complete(
                system=self.conversation.system_context,
                messages=history(self.conversation),
                tools=specs,
            )
            # The first prompt carries the block: its exact size, for the Cost card.
            memory.note_prompt_tokens(self.conversation.session_id, reply.usage.input_tokens)
            return reply
        except ProviderError as error:
            log.warning("chat provider failed: %s", error)
            self.add(
                role="notice",
                content=f"The AI model could not answer ({error.kind}): {sentence(str(error))} "
                "Please try again in a moment.",
            )
        except Exception:
            # An SDK bug must cost the user a reply, not the page.
            log.exception("chat provider raised unexpectedly")
            self.add(role="notice", content="The AI model could not answer. Please try again.")
        return None


def history(conversation: Conversation) -> list[Message]:
    """The conversation in the provider-neutral shape (notices are not the model's)."""
    out: list[Message] = []
    for row in messages_of(conversation):
        if row.role == "user":
            out.append(Message.user(row.content))
        elif row.role == "assistant":
            calls = [ToolCall(**c) for c in row.tool_calls or ()]
            if row.content or calls:
                out.append(Message.assistant(row.content, calls))
        elif row.role == "tool" and row.tool_call_id:
            call = ToolCall(row.tool_call_id, row.tool_name or "", row.arguments or {})
            out.append(Message.tool_result(call, json.dumps(row.result)))
    return out


def call_dict(call: ToolCall) -> dict[str, Any]:
    """A call as the conversation keeps it: the model sees it again, hidden fields hidden."""
    return {"id": call.id, "name": call.name, "arguments": concealed(call.name, call.arguments)}
