"""What two entries are compared on: content words, numbers, polarity and target.

Near duplicates and contradictions are found by comparing a proposal with
each active entry, so both are reduced to the same `Content`: the folded
content words (stop words and polarity words left out, verbs for the same act
spelled one way, light stemming), the numbers, whether it is negative, and its
guardrail target. `similarity` is pg_trgm's trigram similarity of two of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property, lru_cache

from ..fields import text_key
from ..guardrails.targets import parse_target
from . import folding


def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


_STOP = _wordset(
    "a an the is are was were be been being of to in on at by for with and or it its this "
    "that these those as from into than then there here which who what when where how do "
    "does did has have had will would shall should can could may might must please also "
    "only just very you your we our they their them any all every each so such"
)
_NEGATIVE = _wordset("never not no avoid forbidden prohibited disallowed nobody none nor without")
_POSITIVE = _wordset("always allowed ok okay fine free feel encouraged required permitted welcome")


def _forms(verb: str) -> set[str]:
    """A regular verb's forms: change, changes, changed, changing."""
    if verb.endswith("y"):
        return {verb, verb[:-1] + "ies", verb[:-1] + "ied", verb + "ing"}
    base = verb[:-1] if verb.endswith("e") else verb
    return {verb, verb + "s", base + "ed", base + "ing"}


# Verbs a site's guidance uses for the same act, in every form: one spelling each.
_SAME_ACT = {
    form: act
    for act, verbs in (
        ("edit", "edit modify change alter update touch rewrite tweak"),
        ("delete", "delete remove erase drop purge"),
        ("create", "create add make"),
    )
    for verb in verbs.split()
    for form in _forms(verb)
} | {"dropped": "delete", "dropping": "delete", "made": "create", "making": "create"}
_CONTRACTION = re.compile(r"n['`]t\b")


def _stem(word: str) -> str:
    for suffix, keep in (("ing", 4), ("ed", 3), ("es", 4), ("s", 3)):
        if word.endswith(suffix) and len(word) - len(suffix) >= keep and not word.endswith("ss"):
            return word[: -len(suffix)]
    return word


@dataclass(frozen=True)
class Content:
    """What two entries are compared on: content words, numbers, polarity, target."""

    words: frozenset[str]
    numbers: frozenset[str]
    negative: bool
    target: str | None
    key: str

    @cached_property
    def grams(self) -> frozenset[str]:
        """Trigrams of the words and numbers, as pg_trgm pads them."""
        return frozenset().union(*map(_word_grams, self.words | self.numbers))

    @classmethod
    def of(
        cls, text: str, target: str | None, server_name: str, *, key: str | None = None
    ) -> Content:
        """`key`: the text's `text_key` when it is at hand (a stored entry's column)."""
        folded = _CONTRACTION.sub(" not", folding.ascii_fold(text))
        tokens = re.findall(r"[a-z0-9]+", folded)
        negative = any(t in _NEGATIVE or t in ("dont", "cannot", "cant") for t in tokens)
        content = [
            _SAME_ACT.get(t) or _stem(t)
            for t in tokens
            if t not in _STOP and t not in _NEGATIVE and t not in _POSITIVE
        ]
        parsed = parse_target(target, server_name)
        return cls(
            words=frozenset(w for w in content if not w.isdigit()),
            numbers=frozenset(w for w in content if w.isdigit()),
            negative=negative,
            target=f"{parsed.key}:{parsed.value}" if parsed.key else None,
            key=key or text_key(text),
        )


@lru_cache(maxsize=1 << 16)
def _word_grams(word: str) -> frozenset[str]:
    padded = f"  {word} "
    return frozenset(padded[i : i + 3] for i in range(len(padded) - 2))


def similarity(a: Content, b: Content) -> float:
    """pg_trgm's similarity of the two word sets (numbers included)."""
    left, right = a.grams, b.grams
    if not left or not right:
        return 0.0
    shared = len(left & right)
    return shared / (len(left) + len(right) - shared)
