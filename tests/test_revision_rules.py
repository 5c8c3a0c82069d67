"""The revision cache's ranked index, rebuilt from the last one (chatmem/revision.py).

What test_recall_ranked.py leaves open: a guidance change rebuilds the index
that `recall(topic=...)` asks, and the entries the change did not touch are
not read and stemmed again. This holds even once the process has analysed
more texts than it remembers on its own (ranking a user's session records
analyses their texts in the same memo), which is when a site with many
entries would otherwise pay for all of them on the first question after
each approval.
"""

from __future__ import annotations

from typing import Any

from chatmem.memory import guidance, switches
from chatmem.memory.recall.ranking import RankedIndex
from tests.hostapp import USERS

KEPT = "Gift wrap is free in December."
ADDED = "Returns are free within 30 days."
TOKEN = "ghp_R8tY2uI6oP0aS4dF8gH2jK6lZ0xC4vB8nM2qW"


def ask(memory: Any, topic: str) -> list[str]:
    """The texts of the guidance `recall` answers the question with, best first."""
    answer = memory.call_tool("recall", {"topic": topic}, user=USERS["editor"])
    return [entry["text"] for entry in answer["guidance"]]


def test_a_new_revision_reads_only_the_entry_it_changed(memory: Any, db: Any) -> None:
    """An approval rebuilds the ranked index from the last one: the untouched entry's
    terms are carried over, only the new entry is read, and both are found."""
    guidance.admin_add(db.session(), {"type": "fact", "text": KEPT}, actor_id="1")
    assert ask(memory, "can I get gift wrap?") == [KEPT]
    first = memory.ranked_guidance(memory.snapshot())
    [kept] = first.index.analysed
    analysed = first.index.analysed[kept]
    # Many other texts analysed since, as ranking session records does: more than
    # the process-wide memo of analyses holds, so the kept entry has left it.
    memo = RankedIndex._analyse
    others = [("", f"session note {n}") for n in range(memo.cache_info().maxsize + 1)]
    RankedIndex.of(others, first.index.analyzer)

    guidance.admin_add(db.session(), {"type": "fact", "text": ADDED}, actor_id="1")
    read_before = memo.cache_info().misses
    second = memory.ranked_guidance(memory.snapshot())
    assert second is not first
    assert memo.cache_info().misses - read_before == 1  # the new entry alone
    assert second.index.analysed[kept] is analysed
    assert ask(memory, "can I get gift wrap?") == [KEPT]
    assert ask(memory, "how long do returns take?") == [ADDED]


def test_a_new_revision_shapes_only_the_entries_that_changed(memory: Any, db: Any) -> None:
    """Entries are shaped for agents (secrets redacted, hidden text dropped) once: an
    approval reuses the last revision's shape of every untouched entry, and an
    entry changed in any field is shaped afresh, so agents read the change."""
    kept = guidance.admin_add(db.session(), {"type": "fact", "text": KEPT}, actor_id="1")
    [shown] = memory.approved_guidance(memory.snapshot()).items
    guidance.admin_add(db.session(), {"type": "fact", "text": ADDED}, actor_id="1")
    second = memory.approved_guidance(memory.snapshot())
    assert [e["id"] for e in second.items if e is shown] == [kept.id]
    # Stored before the rules (no channel takes it now): a secret in the title.
    kept.title = f"wrap with {TOKEN}"
    switches.bump_revision(db.session())
    db.session.commit()
    third = memory.approved_guidance(memory.snapshot())
    [again] = [e for e in third.items if e["id"] == kept.id]
    assert again is not shown and again["text"] == KEPT
    assert again["title"] == "wrap with [redacted:github_token]"
