"""Proposals that retire an active guardrail: "Post 5 is no longer the header".

A guardrail stops an agent only while it is active, so the cheapest attack on
one is a fact that says it no longer holds. Such a proposal names what the
guardrail guards and negates, retires or exempts it; the screen flags it
(`retraction`) and names the guardrail, so the curator sees which rule the
text would undo before approving it.

"Names" means any of: the proposal's own target is the guardrail's; its
number ("post 5", "Beitrag 5") is the guardrail's post id; it says "guardrail
#3" for entry 3; the words of the target ("header" of header_footer, "delete"
and "post" of delete-post, also as other languages name a header or footer);
or two content words of the guardrail's text. "Retires" is a phrase of
`retraction_words.RETIRED` ("no longer", "was lifted", "gilt nicht mehr") or
`EXEMPTED` ("is exempt", "can be edited freely"). Both must hold: a fact
about the header that retires nothing, or a retirement of something no
guardrail guards, is not flagged. A rule said to be retired without naming
which (`rule_retired`: "the rule no longer applies") is flagged without a
guardrail, and only with a RETIRED phrase.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..guardrails.targets import Target
from . import retraction_words
from .folding import views
from .phrasing import compile_words, phrase

_RETIRED = compile_words(retraction_words.RETIRED)
_RETRACTED = compile_words([*retraction_words.RETIRED, *retraction_words.EXEMPTED])
_ENTRY = rf"(?:{'|'.join(map(phrase, retraction_words.ENTRY_WORDS))})"
_RULE = compile_words(retraction_words.RULE_WORDS)
_PARTS = {part: compile_words(names) for part, names in retraction_words.SITE_PARTS.items()}
# Target words that say what is done, not what is guarded.
_VERBS = frozenset({"edit", "update", "delete", "create", "add", "remove", "change", "set"})


@dataclass(frozen=True)
class Guarded:
    """An active guardrail, as this check reads it."""

    id: int
    title: str
    target: Target
    words: frozenset[str]  # its text's content words (content.Content.words)


@dataclass(frozen=True)
class Retraction:
    guardrail: Guarded
    excerpt: str


def _stem(word: str) -> str:
    return word[:-1] if word.endswith("e") and len(word) > 4 else word


def _names(guarded: Guarded, words: str, tokens: list[str], proposal: Target, shared: int) -> bool:
    target = guarded.target
    if target.key is not None and target == proposal:
        return True
    if re.search(rf" (?:guardrail|rule|entry|regel|regla|règle|regra) {guarded.id} ", words):
        return True
    if target.key == "post_id" and re.search(rf" {_ENTRY} {re.escape(target.value)} ", words):
        return True
    if target.key in ("post_type", "tool"):
        parts = [p for p in re.split(r"[^a-z0-9]+", target.value) if p]
        for part in parts:
            if part in _PARTS and _PARTS[part].search(words):
                return True  # "header" of header_footer, in any language retraction_words has
        if parts and all(any(t.startswith(_stem(p)) for t in tokens) for p in parts):
            return True  # "deleting ... posts" for delete-post
        if [p for p in parts if p not in _VERBS] and shared >= 2:
            return True
    return shared >= 2


def find(
    text: str, target: Target, words: frozenset[str], guardrails: Iterable[Guarded]
) -> Retraction | None:
    """The first active guardrail this proposal retires, if any.

    `target`: the proposal's own (parsed); `words`: its content words, as
    content.Content computes them, to compare with each guardrail's.
    """
    seen = views(text)
    retracted = _RETRACTED.search(seen.words)
    if retracted is None:
        return None
    tokens = seen.words.split()
    for guarded in guardrails:
        if _names(guarded, seen.words, tokens, target, len(words & guarded.words)):
            return Retraction(guarded, retracted.group().strip())
    return None


def rule_retired(text: str) -> str | None:
    """A rule said to be retired without saying which one ("the rule no longer applies")."""
    seen = views(text)
    retired = _RETIRED.search(seen.words)
    if retired and _RULE.search(seen.words):
        return retired.group().strip()
    return None
