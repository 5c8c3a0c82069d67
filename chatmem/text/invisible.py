"""Invisible text and lookalike letters: what a person reviewing a field could not see.

- **Invisible text** (`hidden_characters`): control characters other than
  newline and tab; every format character (category Cf: tags, bidi
  controls, zero-width characters, the soft hyphen, BOM, ...); Unicode's
  Default_Ignorable_Code_Point set (Hangul fillers, variation selectors,
  the whole tag block); private-use, surrogate and non-characters; line and
  paragraph separators; the blank Braille pattern. ZWNJ and ZWJ pass only
  where they are spelling (Persian, after a virama, inside an emoji sequence). Emoji presentation
  selectors (U+FE0E, U+FE0F) pass when they follow a visible character, so
  "❤️" is fine while a run of them (a channel for hidden data) is not.
- **Lookalike letters** (`lookalike_characters`): a word with ASCII letters
  must not hold a letter from another script that Unicode's confusables
  data (UTS #39, via `confusable_homoglyphs`) lists as confusable with an
  ASCII letter: a Cyrillic "а" in "pаssword", a Greek omicron in "blοck",
  a fullwidth or mathematical "ａ". Words wholly in another script
  (Russian, Greek) and accented Latin letters ("café", Turkish "ı") pass.

Stored text from before the rules is shown with `visible` (`<U+200B>`)
where a person reads it. This module imports nothing else of chatmem's.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable

# -- invisible characters -------------------------------------------------------

# Code point ranges refused everywhere. Cf and the other categories below are
# listed as ranges (a per-character category lookup would cost a Python loop
# on every write and read); tests/test_text.py checks them against Python's
# own Unicode database, so a newer Unicode release cannot slip one past.
_ALWAYS_HIDDEN: tuple[tuple[int, int], ...] = (
    (0x0000, 0x0008),  # C0 controls before tab
    (0x000B, 0x001F),  # C0 controls after newline (CR is normalised to LF first)
    (0x007F, 0x009F),  # DEL and the C1 controls
    (0x00AD, 0x00AD),  # soft hyphen
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x0600, 0x0605),  # Arabic number signs (Cf)
    (0x061C, 0x061C),  # Arabic letter mark (bidi)
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x115F, 0x1160),  # Hangul choseong/jungseong fillers (blank)
    (0x17B4, 0x17B5),  # Khmer inherent vowels (invisible)
    (0x180B, 0x180F),  # Mongolian variation selectors and vowel separator
    (0x200B, 0x200B),  # zero-width space
    (0x200E, 0x200F),  # LRM, RLM (ZWNJ and ZWJ: see _JOINER_HIDDEN)
    (0x2028, 0x202E),  # line/paragraph separators; bidi embeddings and overrides
    (0x2060, 0x206F),  # word joiner, invisible operators, bidi isolates, deprecated
    (0x2800, 0x2800),  # Braille pattern blank
    (0x3164, 0x3164),  # Hangul filler
    (0xD800, 0xDFFF),  # surrogates (a JSON "\ud800" escape)
    (0xE000, 0xF8FF),  # private use
    (0xFDD0, 0xFDEF),  # non-characters
    (0xFE00, 0xFE0D),  # variation selectors 1-14
    (0xFEFF, 0xFEFF),  # byte order mark / zero-width no-break space
    (0xFFA0, 0xFFA0),  # halfwidth Hangul filler
    (0xFFF0, 0xFFFB),  # unassigned ignorables, interlinear annotation
    (0xFFFE, 0xFFFF),  # non-characters
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),  # Egyptian hieroglyph format controls
    (0x1BCA0, 0x1BCA3),  # shorthand format controls
    (0x1D173, 0x1D17A),  # musical formatting
    (0xE0000, 0xE0FFF),  # tags and variation selectors supplement
    (0xF0000, 0x10FFFF),  # supplementary private use
)
# Non-characters U+xFFFE/U+xFFFF of planes 1-14 (planes 0, 15 and 16 are listed above).
_NONCHARACTERS = tuple((p * 0x10000 + 0xFFFE, p * 0x10000 + 0xFFFF) for p in range(1, 15))


def _char_class(ranges: Iterable[tuple[int, int]]) -> str:
    def esc(code: int) -> str:
        return f"\\U{code:08x}"

    return "".join(esc(a) if a == b else f"{esc(a)}-{esc(b)}" for a, b in ranges)


_RANGES = _ALWAYS_HIDDEN + _NONCHARACTERS
_BMP = [(a, min(b, 0xFFFF)) for a, b in _RANGES if a <= 0xFFFF]
_ASTRAL = [(max(a, 0x10000), b) for a, b in _RANGES if b > 0xFFFF]
# Three patterns, because one character class that mixes BMP and astral ranges
# is some 30 times slower to scan in Python's `re`: ASCII text needs only the
# first, and text with no astral character only the first two.
_ASCII_HIDDEN = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
# ZWNJ and ZWJ are spelling in some scripts, and visible there: Persian needs ZWNJ
# ("می‌شوند"), Indic scripts put one after a virama, emoji sequences join with ZWJ
# ("👩‍💻"). They pass in those places only (after IDNA's CONTEXTJ rules, RFC 5892
# A.1/A.2, with Arabic-script blocks for its joining types), one at a time;
# anywhere else ("ig\u200cnore", at a word's edge, in a run) they are refused.
_VIRAMAS = "".join(chr(c) for c in range(0x0900, 0x1100) if unicodedata.combining(chr(c)) == 9)
_JOINING = "\u0620-\u064a\u066e-\u06d3\u06d5\u06fa-\u06ff\u0710-\u074f\u0750-\u077f\u08a0-\u08c9"
_EMOJI = "\u2600-\u27bf\U0001f000-\U0001faff"
_JOINER_HIDDEN = (
    f"\u200c(?<![{_VIRAMAS}]\u200c)(?!(?<=[{_JOINING}]\u200c)(?=[{_JOINING}]))"
    f"|\u200d(?<![{_VIRAMAS}]\u200d)(?!(?<=[{_EMOJI}\ufe0f]\u200d)(?=[{_EMOJI}]))"
)
_BMP_HIDDEN = re.compile(
    f"[{_char_class(_BMP)}]|{_JOINER_HIDDEN}"
    # an emoji presentation selector with nothing visible before it to present
    "|[\ufe0e\ufe0f](?<![^\\s\ufe00-\ufe0f][\ufe0e\ufe0f])"
)
_ASTRAL_HIDDEN = re.compile(f"[{_char_class(_ASTRAL)}]")
_BMP_ONLY = re.compile("[\u0000-\uffff]*")
_LISTED_MAX = 10
_WORD = re.compile(r"[^\W_]+")
_ASCII_LETTER = re.compile(r"[A-Za-z]")


def _hidden_patterns(text: str) -> tuple[re.Pattern[str], ...]:
    if text.isascii():
        return (_ASCII_HIDDEN,)
    if _BMP_ONLY.fullmatch(text):
        return (_BMP_HIDDEN,)
    return (_BMP_HIDDEN, _ASTRAL_HIDDEN)


def normalise(text: str) -> str:
    """NFC, and CR LF / CR to LF (a browser's textarea sends CR LF)."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if text.isascii():
        return text
    return unicodedata.normalize("NFC", text)


def hidden_characters(text: str) -> list[str]:
    """The invisible and control characters in `text`, each once, in order."""
    found = sorted(m.span() for p in _hidden_patterns(text) for m in p.finditer(text))
    return list(dict.fromkeys(text[a:b] for a, b in found))


def strip_invisible(text: str) -> str:
    """`text` without its invisible characters."""
    for pattern in _hidden_patterns(text):
        text = pattern.sub("", text)
    return text


@functools.cache
def _lookalikes() -> frozenset[str]:
    """Non-Latin characters Unicode lists as confusable with an ASCII letter.

    Loaded on first use: the confusables table is a 900 kB JSON file.
    """
    from confusable_homoglyphs.confusables import confusables_data

    found = set()
    for letter in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ":
        for homoglyph in confusables_data.get(letter) or ():
            char = homoglyph["c"]
            if len(char) == 1 and not char.isascii() and not homoglyph["n"].startswith("LATIN "):
                found.add(char)
    return frozenset(found)


def lookalike_characters(text: str) -> list[str]:
    """Letters that pass for ASCII ones inside a word that has ASCII letters."""
    if text.isascii():
        return []
    table = _lookalikes()
    if table.isdisjoint(text):  # a set scan in C: most non-ASCII text ends here
        return []
    found: dict[str, None] = {}
    for match in _WORD.finditer(text):
        word = match.group()
        if word.isascii() or not _ASCII_LETTER.search(word):
            continue
        for char in word:
            if char in table:
                found[char] = None
    return list(found)


def describe(chars: Iterable[str]) -> str:
    """`U+200B ZERO WIDTH SPACE, U+202E RIGHT-TO-LEFT OVERRIDE` (first ten, then a count)."""
    chars = list(chars)
    listed = ", ".join(f"{code_point(c)} {_name(c)}" for c in chars[:_LISTED_MAX])
    more = len(chars) - _LISTED_MAX
    return listed + (f" and {more} more" if more > 0 else "")


def code_point(char: str) -> str:
    return f"U+{ord(char):04X}"


def _name(char: str) -> str:
    name = unicodedata.name(char, "")
    if name:
        return name
    kind = {"Cc": "control", "Co": "private use", "Cs": "surrogate"}
    return f"({kind.get(unicodedata.category(char), 'unassigned')})"


def _mark_lookalikes(text: str) -> str:
    marked = set(lookalike_characters(text))
    if marked:
        text = "".join(f"<{code_point(c)}>" if c in marked else c for c in text)
    return text


def visible(text: str) -> str:
    """`text` with every invisible or lookalike character shown as `<U+XXXX>`.

    For places where a person reads stored text (the Memory screen, the
    ledger and digests): what was hidden becomes something to see.
    """
    text = _mark_lookalikes(text)
    for pattern in _hidden_patterns(text):
        text = pattern.sub(lambda m: f"<{code_point(m.group())}>", text)
    return text
