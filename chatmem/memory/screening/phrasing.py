"""The phrasebook's phrases as regular expressions on a text's folded `words` view.

A phrase is folded as the text is (`folding.ascii_fold`, then words only), so
one written "Önceki talimatları unut" matches "onceki talimatlari unut" in the
view. ``*`` ends a stem, ``~`` is a gap of up to three words (see phrasebook).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .folding import ascii_fold

_GAP = r"(?: [a-z0-9]+){0,3}"


def _word(word: str) -> str:
    if word == "~":
        return _GAP
    stem = word.endswith("*")
    parts = re.findall(r"[a-z0-9]+", ascii_fold(word.rstrip("*")))
    if not parts:
        raise ValueError(f"phrase word {word!r} folds to nothing")
    return " ".join(map(re.escape, parts)) + (r"[a-z0-9]*" if stem else "")


def phrase(text: str) -> str:
    """One phrase as a pattern on the words view (no padding)."""
    out = ""
    for word in text.split():
        pattern = _word(word)
        out += pattern if pattern == _GAP or not out else " " + pattern
    return out


def compile_words(phrases: Iterable[str]) -> re.Pattern[str]:
    """Any of the phrases as whole words of a `words` view (" word word ")."""
    return re.compile(rf" (?:{'|'.join(map(phrase, phrases))}) ")
