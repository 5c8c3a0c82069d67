"""The active guidance, indexed once per revision, and what a proposal is compared with.

Comparing a proposal with every active entry would cost as much as the site
has guidance, so `ActiveIndex` is built once per process per revision (the
same revision that keys the block cache), reusing the entries a change did
not touch: an inverted index from content word to entries narrows the
candidates to those sharing a not-too-common word with the proposal, and
only those are compared by trigram similarity (`near_duplicate`,
`contradiction`). It also holds the active guardrails, for `retraction`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session as OrmSession

from .. import reads
from ..guardrails.targets import parse_target
from ..models import Guidance
from . import retraction
from .content import Content, similarity
from .flags import Flag, written

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
        text = written(fields)
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


def nearly_same(a: Content, b: Content) -> bool:
    """Whether two texts say the same, as `near_duplicate` judges it: the same folded
    text, or the same polarity and numbers and a similarity of at least DUPLICATE."""
    if a.key == b.key:
        return True
    return (
        a.negative == b.negative and not (a.numbers ^ b.numbers) and similarity(a, b) >= DUPLICATE
    )


def _about(entry: Active, code: str, says: str) -> Flag:
    return Flag(code, f"{says} active entry #{entry.id} “{entry.title}”.", entry.id)
