"""Folded views of a text: what a reader (or a model) sees, whatever was typed.

Attackers disguise wording to slip past a filter, so the poisoning screen's
wording checks (`poison`) read these views rather than the text as typed:

- `plain`: NFKC, then transliterated to ASCII by `anyascii`: full-width and
  mathematical letters, accents and other scripts' words become Latin
  letters, invisible characters vanish and Unicode tag characters turn into
  the ASCII they hide. Cyrillic or Greek text is read twice, transliterated
  (as a speaker reads it) and as it looks (lookalikes as the Latin letters
  they imitate); right-to-left text is read the way it is shown too. Lower
  case, runs of spaces folded, punctuation and line breaks kept; letters
  typed one at a time joined ("i g n o r e", "w.w.w"), digits inside a word
  read as letters ("1gn0r3"), and words split in two joined again when the
  whole is a word the rules look for ("ig nore").
- `words`: `plain` as words: symbols inside a word read as letters
  ("p@$$word"), contractions spelled out, common phrasings made one word
  ("pay no attention to" -> "disregard").
- `joined`: letters only, for splits the vocabulary does not know.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from anyascii import anyascii

_LEET = str.maketrans("013457@$|!", "oieastasii")
_LEETABLE = re.compile(r"[a-z0-9@$|!]+")
_MIXED = re.compile(r"\b(?=[a-z]*\d)(?=\d*[a-z])[a-z\d]+\b")
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")
_CONTRACTIONS = {
    "dont": "do not",
    "doesnt": "does not",
    "didnt": "did not",
    "cant": "can not",
    "cannot": "can not",
    "wont": "will not",
    "isnt": "is not",
    "arent": "are not",
    "shouldnt": "should not",
    "mustnt": "must not",
    "youre": "you are",
    "ur": "your",
    "u": "you",
    "r": "are",
}
# Phrasings made one word, so the rules (`poison`) can match them as one.
ONE_WORD = [
    (r"pay no (attention|heed|mind)( to)?", "disregard"),
    (
        r"(do not|never|stop|no longer|no need to|need not|not) "
        r"(follow|obey|heed|respect|observe|honou?r)(ing|s)?",
        "disregard",
    ),
    (r"(set|put|push|throw|toss|cast) (aside|away|out)", "discard"),
    (r"api ?keys?", "apikey"),
    (r"(private|ssh|secret|signing) keys?", "privatekey"),
    (r"(access|auth|bearer|session|api|admin) tokens?", "token"),
    (r"env(ironment)? ?var(iable)?s?|dot env", "envvars"),
    (r"(session )?cookies?", "cookie"),
]
_ONE_WORD_RES = [(re.compile(rf" {pattern} "), f" {word} ") for pattern, word in ONE_WORD]


# Cyrillic and Greek letters drawn like Latin ones (Unicode's confusables for
# the letters an attacker mixes into English words). Transliteration alone
# reads Cyrillic "у" as "u"; a reader sees "y".
_LOOKALIKES = str.maketrans(
    "аАвВеЕёЁкКмМнНоОрРсСтТуУхХіІїЇјЈѕЅԁһӏԛԝαΑβΒεΕζΖηΗιΙκΚμΜνΝοΟρΡτΤυΥχΧ",
    "aAbBeEeEkKmMhHoOpPcCtTyYxXiIiIjJsSdhlqwaAbBeEzZnHiIkKmMvNoOpPtTuYxX",
)
_LOOKALIKE = re.compile("[\u0370-\u03ff\u0400-\u052f]")


@dataclass(frozen=True)
class Views:
    plain: str
    words: str  # " word word ... " (padded, so phrases can be matched with spaces)
    tokens: tuple[str, ...]
    joined: str


def ascii_fold(text: str) -> str:
    """NFKC, then ASCII by transliteration, lower case."""
    return anyascii(unicodedata.normalize("NFKC", text)).lower()


def views(text: str, vocabulary: frozenset[str] = frozenset()) -> Views:
    """The folded views of a text; `vocabulary`: words to join again when split in two."""
    readings = [text]
    # Right-to-left overrides show text backwards: read it the way it is shown too.
    if _BIDI.search(text):
        readings.append(text[::-1])
    # Cyrillic or Greek: read it as a speaker would (transliterated) and as it looks.
    if _LOOKALIKE.search(text):
        readings.append(text.translate(_LOOKALIKES))
    # Written in digits for letters throughout ("4c7 45 r007"): numbers are letters too.
    if len(_MIXED.findall(ascii_fold(text))) >= 2:
        readings.append(text.translate(_LEET))
    plain = _plain("\n".join(readings), vocabulary)
    tokens = _join_single_letters([_unleet(t) for t in _LEETABLE.findall(plain)])
    tokens = [w for t in tokens for w in _CONTRACTIONS.get(t, t).split()]
    words = f" {' '.join(tokens)} "
    for pattern, replacement in _ONE_WORD_RES:
        words = pattern.sub(replacement, words)
        words = pattern.sub(replacement, words)  # overlapping neighbours
    return Views(plain, words, tuple(words.split()), re.sub(r"[^a-z]+", "", plain))


def _plain(text: str, vocabulary: frozenset[str]) -> str:
    """ASCII, lower case, with the disguises undone that punctuation survives."""
    plain = ascii_fold(text)
    plain = re.sub(r"n['`]t\b", " not", plain)
    plain = re.sub(r"[ \t]+", " ", plain)
    # One character at a time: "i g n o r e", "w.w.w...e.v.i.l" (from three on: "e.g." stays)
    plain = re.sub(r"(?<!\S)(\S )+\S(?!\S)|(?<!\S)(\S\.){2,}\S", _every_other, plain)
    # digits for letters inside a word: "1gn0r3", "hxxp5" (numbers stay numbers)
    plain = re.sub(r"[a-z0-9]*[a-z][a-z0-9]*", lambda m: m.group().translate(_LEET), plain)
    return _rejoin(plain, vocabulary)


def _every_other(found: re.Match[str]) -> str:
    run = found.group()
    return run[::2] if len(run) >= 5 else run


def _rejoin(plain: str, vocabulary: frozenset[str]) -> str:
    """Words split in the middle ("ig nore", "in struc tions") joined again, when the
    joined word is one the rules look for and its parts are not all such words."""
    parts = re.split(r"([a-z]+)", plain)  # separator, word, separator, word, ..., separator
    words, separators = parts[1::2], parts[2::2]
    out = [parts[0]]
    i = 0
    while i < len(words):
        for n in (3, 2, 1):
            group = words[i : i + n]
            spaced = all(sep == " " for sep in separators[i : i + n - 1])
            if n == 1 or (
                len(group) == n
                and spaced
                and "".join(group) in vocabulary
                and not all(w in vocabulary for w in group)
            ):
                out += ["".join(group), separators[i + len(group) - 1]]
                i += len(group)
                break
    return "".join(out)


def _unleet(token: str) -> str:
    """A word written with symbols for letters ("p@$$word"), read as letters."""
    if token.isalpha() or not any(c.isalpha() for c in token):
        return token.strip("@$|!")
    return re.sub(r"[^a-z0-9]", "", token.translate(_LEET))


def _join_single_letters(tokens: list[str]) -> list[str]:
    """Three or more single letters in a row as one word: "i g n o r e" -> "ignore"."""
    out: list[str] = []
    run: list[str] = []
    for token in [*tokens, ""]:
        if len(token) == 1 and token.isalpha():
            run.append(token)
            continue
        out.extend(["".join(run)] if len(run) >= 3 else run)
        run = []
        if token:
            out.append(token)
    return out
