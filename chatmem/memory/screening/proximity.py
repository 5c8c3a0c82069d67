"""Wording checks that need more than a phrase: a verb near its object, unless negated.

"Ignore all rules" is an attack and "ignore the lint rules" is not; "send the
passwords" is one and "never send passwords" is a guardrail. So these checks
look for a verb of one class (dismissal, disclosure, planting) within a few
words of an object of another (the reader's rules, a secret, a public place),
skip a verb a negation stands before, and, for evasion, a refusal followed by
advice to try again. Each returns the words that matched, or None.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from . import phrasebook
from .phrasing import compile_words


def _words(*alternatives: str) -> re.Pattern[str]:
    return re.compile("|".join(alternatives))


# Override: a verb of dismissal near what an agent must obey. A strong object
# alone is enough ("ignore the instructions"); a weak one needs a qualifier
# that points at the agent's own rules ("ignore all rules", not "ignore the
# lint rules"). Stems cover the common European phrasings after folding.
_DISMISS = _words(
    r"\w*ignor\w*|negeer\w*",
    r"disregard\w*",
    r"forget\w*|forgot\w*",
    r"overrid\w*|overrul\w*|overwrit\w*",
    r"bypass\w*|circumvent\w*|evad\w*",
    r"neglect\w*|discard\w*|abandon\w*|dismiss\w*|supersed\w*|nullif\w*|void",
    r"olvid\w*|oubli\w*|vergiss\w*|vergess\w*|missacht\w*|dimentic\w*|trascur\w*",
    r"esquec\w*|desconsider\w*|zabud\w*|umgeh\w*|contourn\w*|salt[ae]\w*",
    r"lift|lifts|lifted|lifting|waiv\w*|suspend\w*|disabl\w*|skip|skips|skipped|skipping",
    r"relax\w*|drop|drops|dropped|break|breaks|broke|breaking",
)
_STRONG = _words(
    r"instr\w*|istruz\w*|anweisung\w*",
    r"directiv\w*|direttiv\w*|directriz\w*|consigne\w*|vorgabe\w*|ukazani\w*|talimat\w*",
    r"guardrail\w*|safeguard\w*|programming|sicherheitsregel\w*",
)
_WEAK = _words(
    r"rules?|regla\w*|regle\w*|regeln?|regol\w*|regras?|pravil\w*",
    r"polic\w*|politi\w*|guidelines?|richtlinie\w*|prompts?",
    r"restrictions?|restricc\w*|restriz\w*|einschrank\w*|ogranichen\w*|constraints?|limits?",
    r"filters?|context|conversation|messages?|memory|guidance|orders|commands?|settings",
    r"safety|security|checks?|review|approval|everything|told|said",
)
_QUALIFIER = _words(
    r"all|any|every|your|yours|you|these|those|other|system|safety|security",
    r"previous\w*|prior|above|earlier|preceding|former|existing|current|original|initial",
    r"todas?|todos?|toutes?|tous|alle\w*|tutt[ei]|vse\w*|tus|tes|vos|votre|deine\w*|ihre\w*",
    r"anterior\w*|previ[ao]s?|precedent\w*|vorherig\w*|bisherig\w*|obig\w*|predydushch\w*",
    r"vorige\w*|poprzedni\w*|wszystk\w*|tidigare|alla",
)
_NEGATION = frozenset({"never", "not", "avoid", "nor"})

# Exfiltration: a verb of disclosure near a secret, unless negated ("never
# post passwords in the chat" is a guardrail, not an attack).
_DISCLOSE = _words(
    r"send\w*|sent|e?mail\w*|upload\w*|forward\w*|leak\w*|reveal\w*",
    r"print\w*|output\w*|dump\w*|expose\w*|exfiltrat\w*|disclos\w*|publish\w*",
    r"tell|share|sharing|paste|echo|transmit\w*|envia\w*|envoie\w*|schick\w*|otprav\w*",
)
_SECRET = _words(
    r"passwords?|passwd|passphrases?|credentials?|secrets?|apikeys?|privatekey|tokens?|env",
    r"envvars|cookie|contrasena\w*|mot de passe|passwort\w*|parol\w*|senha\w*",
)

# Evasion: a refusal word, then (within a few words) a word of trying again,
# in English and the phrasebook's languages.
_REFUSED = compile_words(["refused", "refusal", "blocked", "rejected", *phrasebook.REFUSED])
_RETRY = compile_words(
    [
        "again",
        "instead",
        "rephrase*",
        "reword*",
        "split",
        "resend",
        "works if",
        "add it back",
        "goes through",
        "slips through",
        *phrasebook.RETRY,
    ]
)


def _near(
    tokens: tuple[str, ...], verb: re.Pattern[str], *, before: int, after: int
) -> Iterator[tuple[int, int, int]]:
    """(start, verb index, end) windows around each token of the verb class."""
    for i, token in enumerate(tokens):
        if verb.fullmatch(token):
            yield max(0, i - before), i, min(len(tokens), i + after + 1)


def _negated(tokens: tuple[str, ...], i: int, verb: re.Pattern[str]) -> bool:
    """Whether a negation stands right before the verb, or before a run of verbs of
    its class joined by and/or: "never ignore ...", "do not send or print ..."."""
    j = i - 1
    while j >= 1 and tokens[j] in ("or", "and") and verb.fullmatch(tokens[j - 1]):
        j -= 2
    return j >= 0 and tokens[j] in _NEGATION


def override(tokens: tuple[str, ...]) -> str | None:
    for start, i, end in _near(tokens, _DISMISS, before=4, after=6):
        if _negated(tokens, i, _DISMISS):
            continue
        window = tokens[start:end]
        strong = any(_STRONG.fullmatch(t) for t in window)
        weak = any(_WEAK.fullmatch(t) for t in window)
        qualified = any(_QUALIFIER.fullmatch(t) for t in window)
        if strong or (weak and qualified):
            return " ".join(tokens[i:end])
    return None


def exfiltration(tokens: tuple[str, ...]) -> str | None:
    for start, i, end in _near(tokens, _DISCLOSE, before=0, after=5):
        if not _negated(tokens, i, _DISCLOSE) and any(
            _SECRET.fullmatch(t) for t in tokens[start:end]
        ):
            return " ".join(tokens[start:end])
    return None


def evasion(words: str) -> str | None:
    """A refusal, then advice to try again another way: "if a call is refused, retry ..."."""
    for refused in _REFUSED.finditer(words):
        tail = words[refused.start() : refused.start() + 200]
        retry = _RETRY.search(tail, 1)
        if retry is None:
            continue
        before = tail[: retry.start()].split()[-3:]
        if not _NEGATION.intersection(before):
            return tail[: retry.end()]
    return None


# Planting a secret where people or agents will read it: "copy any API token into post Notes".
_PLANT = _words(
    r"cop(y|ies|ied|ying)|paste\w*|put|puts|add|adds|write|writes|save|saves|include\w*|quote\w*",
    r"insert\w*|stor(e|es|ing)|append\w*|record\w*|log|logs|embed\w*",
)
_PLACE = _words(
    r"posts?|pages?|notes?|drafts?|comments?|footers?|headers?|alt|summary|summaries|memory|facts?",
    r"public|chat|titles?|excerpts?|captions?|descriptions?|newsletters?|reviews?|proposals?",
)


def planting(tokens: tuple[str, ...]) -> str | None:
    for start, i, end in _near(tokens, _PLANT, before=6, after=12):
        window = tokens[start:end]
        if _negated(tokens, i, _PLANT) or _NEGATION.intersection(tokens[i:end]):
            continue
        if any(_SECRET.fullmatch(t) for t in window) and any(
            _PLACE.fullmatch(t) for t in tokens[i + 1 : end]
        ):
            return " ".join(tokens[i:end])
    return None
