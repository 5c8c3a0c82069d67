"""Does this call hit a guardrail: the one matcher, enforcement's and the dry run's (SPEC §6).

Matching runs on the dispatcher's canonical arguments: the tool's slug, the
call's ids in canonical form, the post type the host's resolver gives each
id, and the labels the host's `target_labels` hook gives the call. Each is
looked up in the compiled index (`index.py`), so a call costs the same few
lookups whether 10 or 10,000 guardrails are active, and the host's hooks are
asked only when a guardrail of their kind is active.

`refusal` is what enforcement makes of a match: the error the dispatcher
raises, failing closed when a hook the match needed raised.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ...errors import ApprovalRequired, BlockedByMemory
from .targets import ID_KEYS, canonical_id, canonical_label

if TYPE_CHECKING:
    from .index import GuardrailIndex, Rule

log = logging.getLogger("chatmem")

#: `(tool name, canonical arguments) -> every label the call touches` (the host's hook).
LabelResolver = Callable[[str, Mapping[str, Any]], Iterable[Any]]

#: What a guardrail check answers: refused, held for a curator, or nothing.
Refusal = BlockedByMemory | ApprovalRequired


def labels_of(
    resolve: LabelResolver, tool_name: str, arguments: Mapping[str, Any]
) -> frozenset[str]:
    """The host's labels for a call, canonical; a lone string is one label, not its letters."""
    found = resolve(tool_name, arguments)
    if found is None:
        return frozenset()
    if isinstance(found, str):
        found = (found,)
    return frozenset(label for item in found if (label := canonical_label(item)))


def match(
    index: GuardrailIndex,
    tool_name: str,
    arguments: Mapping[str, Any],
    resolve_post_type: Callable[[Any], str | None] | None,
    resolve_labels: LabelResolver | None = None,
) -> Rule | None:
    """The first rule that refuses or holds this call, or None.

    The host's hooks are asked only when a guardrail of their kind is active.
    """
    rules = index.by_tool.get(tool_name.lower())
    if rules:
        return rules[0]
    ids = [i for k in ID_KEYS if k in arguments and (i := canonical_id(arguments[k]))]
    for ident in ids:
        rules = index.by_post_id.get(ident)
        if rules:
            return rules[0]
    if index.by_post_type and resolve_post_type is not None:
        for ident in ids:
            post_type = resolve_post_type(int(ident) if ident.isdigit() else ident)
            rules = index.by_post_type.get((post_type or "").lower())
            if rules:
                return rules[0]
    if index.by_label and resolve_labels is not None:
        labels = labels_of(resolve_labels, tool_name, arguments)
        # The oldest rule among the call's labels, as one bucket would give it.
        found = [index.by_label[label][0] for label in labels if label in index.by_label]
        if found:
            return min(found, key=index.position.__getitem__)
    return None


def refusal(
    index: GuardrailIndex,
    tool_name: str,
    arguments: Mapping[str, Any],
    resolve_post_type: Callable[[Any], str | None] | None,
    resolve_labels: LabelResolver | None,
) -> Refusal | None:
    """The refusal for this call, or None when no active guardrail matches.

    `ApprovalRequired` (an `ask` rule matched) is not final: the dispatcher
    hands it to `memory.held.gate`, which holds the call, refuses it, or
    finds the grant that lets it run.
    """
    if not len(index):
        return None
    try:
        rule = match(index, tool_name, arguments, resolve_post_type, _told(resolve_labels))
    except _LabelsFailed:
        # Fail closed: a guardrail on a label the host could not give.
        log.exception("target_labels failed; refusing %s", tool_name)
        return BlockedByMemory(
            f"{tool_name} was refused: its target labels could not be checked against the "
            "site's guardrails.",
            details={"guidance_id": None, "title": "target labels check failed"},
        )
    except Exception:
        # Fail closed: a guardrail on a post type we could not resolve.
        log.exception("post type resolver failed; refusing %s", tool_name)
        return BlockedByMemory(
            f"{tool_name} was refused: the post type could not be checked against the "
            "site's guardrails.",
            details={"guidance_id": None, "title": "post type check failed"},
        )
    if rule is None:
        return None
    found = {"guidance_id": rule.id, "title": rule.title, "target": rule.target}
    if rule.severity == "ask":
        return ApprovalRequired(
            f"{tool_name} needs a curator's approval (guardrail #{rule.id}: {rule.title}).",
            details=found,
        )
    return BlockedByMemory(
        f"{tool_name} was refused by project memory guardrail #{rule.id}: {rule.title}",
        details=found,
    )


class _LabelsFailed(Exception):
    """The host's `target_labels` hook raised (its error is the cause)."""


def _told(resolve: LabelResolver | None) -> LabelResolver | None:
    """The host's label hook, its failures told apart from the post type resolver's."""
    if resolve is None:
        return None

    def labels(tool_name: str, arguments: Any) -> Any:
        try:
            found = resolve(tool_name, arguments)
            # A generator runs here, inside the try; a lone string stays one label.
            return found if found is None or isinstance(found, str) else list(found)
        except Exception as error:
            raise _LabelsFailed() from error

    return labels
