"""Wording that poisons a memory: what an attacker would try to get approved.

An approved proposal is read by every later agent as part of its system
context, so the wording checks look for what an attacker would put there:
orders to ignore or override the rules, role-play and system-prompt talk,
text dressed up as the block itself, HTML and script, addresses to send
things to, requests to reveal secrets or to plant them where others read,
orders for what the reader says in its answers, advice on getting round a
refusal, and claimed authority. This module reads a text's folded views with
every rule set and keeps one hit per code: the English phrases (`english`),
patterns on the plain text (`plain_patterns`), checks of a verb near its
object (`proximity`), and the same ideas in other languages (`phrasebook`,
`cjk`).

Attackers disguise their wording, so every check reads the folded views of
the text (`folding.views`), not the text as typed: lookalike letters, digits
for letters, spaced-out and split words and other scripts are undone first.

The rules are data (word classes, phrases, patterns) so that a new phrasing is
one line. Each check returns at most one `Hit` per code, with the folded text
that matched, so a reviewer sees what was read even when it was disguised.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from . import cjk, english, phrasebook, plain_patterns, proximity
from .folding import ONE_WORD, views
from .phrasing import compile_words


@dataclass(frozen=True)
class Hit:
    code: str
    excerpt: str


_WORD_RES = {code: re.compile(rf" (?:{'|'.join(p)}) ") for code, p in english.PHRASES.items()}
_PLAIN_RES = {code: re.compile("|".join(p)) for code, p in plain_patterns.PATTERNS.items()}

# The same ideas in other languages (phrasebook.py), on the words view, and
# Chinese, Japanese and Korean on the text as typed.
_FOREIGN = {
    "override": compile_words(phrasebook.OVERRIDE),
    "role_play": compile_words(phrasebook.ROLE_PLAY),
    "exfiltration": compile_words(phrasebook.EXFILTRATION),
    "hijack": compile_words(phrasebook.HIJACK),
    "authority": compile_words(phrasebook.AUTHORITY),
}
_CJK = {code: re.compile("|".join(p)) for code, p in cjk.PATTERNS.items()}

# Words split in the middle ("ig nore prev ious"): distinctive letter runs.
_JOINED: list[tuple[str, re.Pattern[str]]] = [
    (
        "override",
        re.compile(
            r"(ignore|disregard|forget)(all|the|your|any)*(previous|prior|above|earlier|preceding)"
            r"|(previous|prior|above|earlier|preceding)(instructions|directives|guardrails|prompts?)"
            r"|forgeteverything|newinstructions|doanythingnow"
            # Chinese, Japanese and Korean, transliterated: ignore/disregard + instruction/rule
            r"|(hulue|wushi|bieguan|musi)\w{0,20}(zhiling|zhishi|guize|tishi|jisi|gyuchik)"
            r"|(zhiling|zhishi|guize|jisi)\w{0,6}(hulue|wushi|musi)"
        ),
    ),
    (
        "evasion",
        re.compile(
            r"(use|try|borrow)(the|an|another)?(admins|other|another|someoneelses)(token|account|key|login)"
        ),
    ),
    (
        "role_play",
        re.compile(
            r"systemprompt|developermode|jailbreak|jailbroken|youarenow|pretendtobe|pretendyouare"
            r"|roleplay|actasif|xitongtishi|kaifazhemoshi|nixianzaishi|yueyu"
        ),
    ),
]


# Words the rules look for, spelled out, so that a word split in two ("ig nore")
# can be joined again: the phrases' own words, and the usual forms of the word
# classes in `proximity`.
_VOCABULARY = frozenset(
    word
    for source in (
        *[p for phrases in english.PHRASES.values() for p in phrases],
        *[p for patterns in plain_patterns.PATTERNS.values() for p in patterns],
        *[pattern for pattern, _word in ONE_WORD],
    )
    for word in re.findall(r"[a-z]{4,}", source)
) | frozenset(
    re.findall(
        r"[a-z]+",
        """ignore ignoring ignora ignorez ignoriere ignorieren ignorer ignorar disregard forget
    forgetting override overrule bypass circumvent discard abandon dismiss supersede neglect
    olvida olvide oubliez oublie vergiss vergessen dimentica esquece esqueca zabud zignoruj
    negeer instructions instruction instrucciones instructies instrukcje instruktsii
    istruzioni instrucoes anweisungen consignes directives directive guardrails guardrail
    guidelines safeguards restrictions constraints previous earlier preceding original
    existing anteriores precedentes precedenti vorherigen bisherigen predydushchie vorige
    poprzednie regeln reglas regles regole regras pravila rules policies prompt system
    everything approve pending entries proposals environment variables password passwords
    credentials secrets private output reveal publish disclose upload forward conventions
    developer jailbreak unrestricted pretend roleplay persona attention approval review""",
    )
)


def _line_from(text: str, start: int) -> str:
    """What a reviewer needs to see of a match: the rest of its line, briefly."""
    return text[start : start + 60].split("\n", 2)[0 if text[start] != "\n" else 1]


def find(text: str) -> list[Hit]:
    """The wording checks' hits for this text, at most one per code, in code order."""
    seen = views(text, _VOCABULARY)
    hits: dict[str, str] = {}

    def hit(code: str, excerpt: str | None) -> None:
        if excerpt and code not in hits:
            hits[code] = " ".join(excerpt.split())[:80].rstrip(".,;: ")

    hit("override", proximity.override(seen.tokens))
    for code, pattern in _WORD_RES.items():
        found = pattern.search(seen.words)
        hit(code, found.group() if found else None)
    for code, pattern in _PLAIN_RES.items():
        found = pattern.search(seen.plain)
        hit(code, _line_from(seen.plain, found.start()) if found else None)
    for code, pattern in _JOINED:
        found = pattern.search(seen.joined)
        hit(code, found.group() if found else None)
    for code, pattern in _FOREIGN.items():
        found = pattern.search(seen.words)
        hit(code, found.group() if found else None)
    typed = unicodedata.normalize("NFKC", text)
    for code, pattern in _CJK.items():
        found = pattern.search(typed)
        hit(code, found.group() if found else None)
    hit("contact", plain_patterns.public_ip(seen.plain))
    hit("exfiltration", proximity.exfiltration(seen.tokens))
    hit("exfiltration", proximity.planting(seen.tokens))
    hit("evasion", proximity.evasion(seen.words))
    return [Hit(code, hits[code]) for code in CODES if code in hits]


CODES = (
    "override",
    "role_play",
    "concealment",
    "fake_structure",
    "markup",
    "contact",
    "exfiltration",
    "hijack",
    "evasion",
    "authority",
)
