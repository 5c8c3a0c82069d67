"""Screening proposals for signs of poisoning (SPEC §9b, "Proposals are screened").

A flag is advice for the person who reviews a proposal; it never changes the
text. A flagged proposal stays pending even with Require approval off, and
the Memory screen approves it only when the person says "Approve anyway".

Three kinds of check, each flag with a stable code, a reason and a label for
the Memory screen (`LABELS`):

- wording (`poison.find`): `override`, `role_play`, `concealment`,
  `fake_structure`, `markup`, `contact`, `exfiltration`, `hijack`, `evasion`,
  `authority`, in English and the languages of `phrasebook`;
- against active guidance: `near_duplicate` (nearly the same words and the
  same polarity), `contradiction` (the opposite polarity, a different
  number in the same sentence, or the same guardrail target) and
  `retraction` (it names what an active guardrail guards and says it no
  longer holds: `retraction.py`, the flag names the guardrail);
- against history: `rejected_before` (the same text, folded as for
  de-duplication, was rejected once): its reason says when, by whom and why
  ("rejected on 2026-11-30 by admin: ..."), from the rejection's audit event.

Flags are computed, never stored as state: the active guidance changes, so a
flag computed when the proposal was made can go stale. `remember` computes
them for its answer (the proposal's audit event keeps the codes), and the
pending tab and every approval compute them afresh.

Cost: comparing with active guidance reads an `ActiveIndex`, built once per
process per revision (the same revision that keys the block cache): an
inverted index from content word to entries narrows the candidates to those
sharing a word with the proposal, skipping words most entries have, and only
those candidates are compared by trigram similarity. The wording checks are
regular expressions over one text; `rejected_before` is one indexed query.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session as OrmSession

from .. import reads
from ..fields import default_title, text_key
from ..guardrails.targets import parse_target
from ..guidance import reason_of, rejections
from ..models import Guidance
from . import folding, poison, retraction

# Trigram similarity (as PostgreSQL's pg_trgm computes it) of the content
# words, above which two entries are "nearly the same" or, with opposite
# polarity, contradict each other. Set on the generated corpus
# (tests/poison_corpus.py): lower ones flagged ordinary facts about the same page.
DUPLICATE = 0.75
OPPOSITE = 0.6
# Most candidates compared by similarity for one proposal.
CANDIDATES = 64
# Above this many changed entries a rebuild reads every text in one query.
REREAD = 500

_WORDING = {
    "override": "Tells the reader to ignore or override its rules or earlier instructions",
    "role_play": "Role-play or system-prompt talk",
    "concealment": "Asks to hide something from the user or from the site's admins",
    "fake_structure": (
        "Imitates the memory block or chat markup (headings, group labels, role tags)"
    ),
    "markup": "Contains HTML, script or chat-role markup",
    "contact": "Contains a link, e-mail address, phone number or other contact detail",
    "exfiltration": (
        "Asks to reveal or send passwords, keys, tokens or the reader's own instructions"
    ),
    "hijack": "Dictates what the reader must say or output in its answers",
    "evasion": "Advises how to get round a refused or blocked call",
    "authority": "Claims an authority or an emergency the text cannot prove",
}
CODES = (*poison.CODES, "near_duplicate", "contradiction", "retraction", "rejected_before")
# What the Memory screen shows next to each code: a person reads the label first.
LABELS = {
    "override": "Orders to ignore the rules",
    "role_play": "Role-play or system-prompt talk",
    "concealment": "Asks to hide something",
    "fake_structure": "Imitates the memory block",
    "markup": "HTML or script markup",
    "contact": "Link or contact detail",
    "exfiltration": "Asks for secrets or instructions",
    "hijack": "Dictates the agent's answers",
    "evasion": "Advice to get round a refusal",
    "authority": "Claimed authority or urgency",
    "near_duplicate": "Nearly the same as an active entry",
    "contradiction": "Contradicts an active entry",
    "retraction": "Retires an active guardrail",
    "rejected_before": "Rejected before",
}
NameOf = Callable[[str | None], str]


@dataclass(frozen=True)
class Flag:
    code: str
    reason: str
    entry_id: int | None = None  # the other entry, for near_duplicate, contradiction, ...

    @property
    def label(self) -> str:
        return LABELS.get(self.code, self.code)

    def to_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {"code": self.code, "reason": self.reason}
        if self.entry_id is not None:
            found["entry_id"] = self.entry_id
        return found


# -- content words, for comparing two entries ------------------------------------


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


# -- the active guidance, indexed once per revision ---------------------------------


@dataclass(frozen=True)
class Active:
    id: int
    title: str
    content: Content
    raw_target: str | None = None  # as stored, to tell an unchanged entry
    type: str = "fact"


_ACTIVE_ROWS = select(
    Guidance.id, Guidance.title, Guidance.text_key, Guidance.target, Guidance.type
).where(Guidance.status == "publish", Guidance.enabled.is_(True))


class ActiveIndex:
    """Active (published, enabled) guidance, ready for comparison with a proposal."""

    def __init__(self, entries: Iterable[Active], server_name: str) -> None:
        self.server_name = server_name
        self.entries = {e.id: e for e in entries}
        self.by_word: dict[str, list[int]] = {}
        self.by_target: dict[str, list[int]] = {}
        for entry in self.entries.values():
            for word in entry.content.words:
                self.by_word.setdefault(word, []).append(entry.id)
            if entry.content.target:
                self.by_target.setdefault(entry.content.target, []).append(entry.id)
        # A word most entries share says little about which one is meant.
        self.common = max(CANDIDATES, len(self.entries) // 8)
        self.guardrails = [
            retraction.Guarded(
                e.id, e.title, parse_target(e.raw_target, server_name), e.content.words
            )
            for e in self.entries.values()
            if e.type == "guardrail"
        ]

    @classmethod
    def load(
        cls, db: OrmSession, server_name: str, previous: ActiveIndex | None = None
    ) -> ActiveIndex:
        """The active guidance now; entries unchanged since `previous` are reused as they are.

        A guidance change touches an entry or two: a rebuild reads the texts of
        those only and folds only them (folding every text is what a first
        build costs).
        """
        known = previous.entries if previous and previous.server_name == server_name else {}
        rows = reads.rows(db, _ACTIVE_ROWS)

        def unchanged(row: Any) -> bool:
            old = known.get(row.id)
            return old is not None and (old.content.key, old.raw_target) == (
                row.text_key,
                row.target,
            )

        changed = [row.id for row in rows if not unchanged(row)]
        texts: dict[int, str] = {}
        if changed:
            query = select(Guidance.id, Guidance.text).where(
                Guidance.status == "publish", Guidance.enabled.is_(True)
            )
            if len(changed) <= REREAD:
                query = query.where(Guidance.id.in_(changed))
            texts = {row.id: row.text for row in db.execute(query)}
        entries = []
        for row in rows:
            if row.id in texts:
                content = Content.of(texts[row.id], row.target, server_name, key=row.text_key)
            elif unchanged(row):
                content = known[row.id].content
            else:
                continue  # switched off between the two reads: no longer active
            entries.append(Active(row.id, row.title, content, row.target, row.type))
        return cls(entries, server_name)

    def __len__(self) -> int:
        return len(self.entries)

    def candidates(self, content: Content) -> list[Active]:
        """Entries sharing the most (not too common) words with this content."""
        shared: Counter[int] = Counter()
        for word in content.words:
            ids = self.by_word.get(word, ())
            if len(ids) <= self.common:
                shared.update(ids)
        return [self.entries[i] for i, _n in shared.most_common(CANDIDATES)]

    def compare(self, content: Content) -> list[Flag]:
        """near_duplicate and contradiction flags for a proposal, the closest entry each."""
        found: dict[str, Flag] = {}
        for entry_id in self.by_target.get(content.target or "", ()):
            entry = self.entries[entry_id]
            if entry.content.key != content.key:
                found.setdefault(
                    "contradiction",
                    _about(entry, "contradiction", f"Has the same target ({content.target}) as"),
                )
        scored = [(similarity(content, e.content), e) for e in self.candidates(content)]
        for score, entry in sorted(scored, key=lambda pair: -pair[0]):
            other = entry.content
            if other.key == content.key:
                continue  # the very same text: `remember` returns that entry instead
            if other.negative != content.negative and score >= OPPOSITE:
                found.setdefault(
                    "contradiction", _about(entry, "contradiction", "Says the opposite of")
                )
            elif score >= DUPLICATE and not (other.numbers ^ content.numbers):
                found.setdefault(
                    "near_duplicate", _about(entry, "near_duplicate", "Nearly the same as")
                )
            elif other.words == content.words and other.numbers != content.numbers:
                found.setdefault(
                    "contradiction",
                    _about(entry, "contradiction", "Gives a different number than"),
                )
        return [found[code] for code in ("near_duplicate", "contradiction") if code in found]

    def retracted(self, fields: Mapping[str, Any], content: Content) -> Flag | None:
        """A `retraction` flag naming the active guardrail the proposal retires."""
        text = _written(fields)
        found = retraction.find(
            text,
            parse_target(fields.get("target"), self.server_name),
            content.words,
            self.guardrails,
        )
        if found is not None:
            rule = found.guardrail
            return Flag(
                "retraction",
                f"Says active guardrail #{rule.id} “{rule.title}” no longer holds "
                f"(“{found.excerpt}”).",
                rule.id,
            )
        vague = retraction.rule_retired(text)
        if vague is not None:
            return Flag("retraction", f"Says a rule no longer holds (“{vague}”).")
        return None


def _about(entry: Active, code: str, says: str) -> Flag:
    return Flag(code, f"{says} active entry #{entry.id} “{entry.title}”.", entry.id)


# -- screening ------------------------------------------------------------------------


def _written(fields: Mapping[str, Any]) -> str:
    """Every field a person will read, for the wording checks."""
    parts = (fields.get(name) for name in ("title", "text", "scope", "target"))
    return "\n".join(p for p in parts if isinstance(p, str) and p.strip())


def _wording(fields: Mapping[str, Any]) -> list[Flag]:
    return [
        Flag(hit.code, f"{_WORDING[hit.code]}: “{hit.excerpt}”.")
        for hit in poison.find(_written(fields))
    ]


# Built once: `remember` runs it on every proposal.
_REJECTED_ONE = (
    select(Guidance.id)
    .where(
        Guidance.text_key == bindparam("key"),
        Guidance.status == "rejected",
        Guidance.id != bindparam("exclude"),
    )
    .order_by(Guidance.id.desc())
    .limit(1)
)


def _rejected(db: OrmSession, keys: Iterable[str], exclude: Iterable[int] = ()) -> dict[str, int]:
    """text_key -> the newest rejected entry with that key."""
    wanted = set(keys)
    if not wanted:
        return {}
    query = (
        select(Guidance.text_key, Guidance.id)
        .where(Guidance.text_key.in_(wanted), Guidance.status == "rejected")
        .order_by(Guidance.id)
    )
    skip = set(exclude)
    return {key: entry_id for key, entry_id in db.execute(query) if entry_id not in skip}


def _check(
    fields: Mapping[str, Any], active: ActiveIndex, rejected: Flag | None = None
) -> list[Flag]:
    content = Content.of(str(fields.get("text") or ""), fields.get("target"), active.server_name)
    flags = _wording(fields) + active.compare(content)
    retired = active.retracted(fields, content)
    if retired is not None:
        flags.append(retired)
    if rejected is not None:
        flags.append(rejected)
    return flags


def check(fields: Mapping[str, Any], active: ActiveIndex) -> list[Flag]:
    """The flags that need no history (wording, active guidance): what a corpus measures."""
    return _check(fields, active)


def _rejected_flags(db: OrmSession, entry_ids: Iterable[int], name_of: NameOf) -> dict[int, Flag]:
    """rejected_before flags, saying when, by whom and why each entry was rejected."""
    ids = set(entry_ids)
    events = rejections(db, ids)
    found = {}
    for entry_id in ids:
        event = events.get(entry_id)
        if event is None:  # rejected before rejections were audited: say what is known
            reason = f"The same text was rejected before (entry #{entry_id})."
        else:
            why = reason_of(event)
            reason = (
                f"The same text was rejected on {event.at:%Y-%m-%d} by {name_of(event.actor_id)}"
                f"{': ' + why if why else ' (no reason given)'} (entry #{entry_id})."
            )
        found[entry_id] = Flag("rejected_before", reason, entry_id)
    return found


def _anyone(actor_id: str | None) -> str:
    return actor_id or "unknown"


def screen(
    db: OrmSession,
    fields: Mapping[str, Any],
    active: ActiveIndex,
    *,
    entry_id: int | None = None,
    name_of: NameOf = _anyone,
) -> list[Flag]:
    """The flags for one proposal (`fields` as `remember` takes them), in CODES order.

    `entry_id`: the proposal's own entry, when it is stored already.
    `name_of`: an audit actor id -> the name a rejected_before flag gives.
    """
    found = reads.first(
        db,
        _REJECTED_ONE,
        {"key": text_key(str(fields.get("text") or "")), "exclude": entry_id or 0},
    )
    rejected = _rejected_flags(db, [found.id], name_of)[found.id] if found else None
    return _check(fields, active, rejected)


def screen_entries(
    db: OrmSession, entries: Iterable[Guidance], active: ActiveIndex, name_of: NameOf = _anyone
) -> dict[int, list[Flag]]:
    """Flags for stored proposals (a page of the pending tab), with two history queries."""
    entries = list(entries)
    rejected = _rejected(db, (e.text_key for e in entries), exclude=(e.id for e in entries))
    flags = _rejected_flags(db, rejected.values(), name_of)
    return {
        e.id: _check(fields_of(e), active, flags.get(rejected.get(e.text_key, 0))) for e in entries
    }


def fields_of(entry: Guidance, changes: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """An entry's written fields, with an edit applied: an edit is screened before it is saved."""
    fields = {name: getattr(entry, name) for name in ("type", "title", "text", "scope", "target")}
    derived = default_title(entry.text)
    for name, value in (changes or {}).items():
        if name in ("title", "scope", "target"):
            fields[name] = value or None  # blank clears it
        elif name in ("type", "text") and value:
            fields[name] = value
    if fields["title"] in (None, derived):
        # A title derived from the text follows an edited text (as `guidance.edit` does).
        fields["title"] = None
    return fields
