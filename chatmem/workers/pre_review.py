"""AI pre-review jobs: claim, ask the provider, keep the note or drop it. No Flask in here.

A sibling of the summary jobs, claimed and run by the same code (`claims`,
`provider_jobs`): a leased, fenced claim, the provider called outside any
transaction, and retryable failures (timeouts, 429, 5xx) tried again with
the jobs' back-off, up to CHATMEM_JOB_MAX_ATTEMPTS.

It fails closed: whatever goes wrong (no answer, an answer that is not a
note of the expected form, a note that is too long), the entry gets no note
and is reviewed as before. And it only ever writes the entry's
pre_review_* columns: it never approves, rejects or edits anything.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session as OrmSession

from ..memory import pre_review
from ..memory.models import Guidance, PreReviewJob, utcnow
from ..memory.screening import ActiveIndex
from ..providers import Message, Provider, ProviderError
from . import claims, provider_jobs
from .claims import Claim, Policy

log = logging.getLogger("chatmem.jobs")


@dataclass
class Stats(provider_jobs.Stats):
    """What one run did, for the CLI's report and for tests."""

    noted: int = 0
    refused: int = 0

    def __str__(self) -> str:
        return (
            f"{self.noted} noted, {self.refused} answers dropped, {self.retrying} to retry, "
            f"{self.failed} failed, {self.skipped} skipped"
        )


def run_due(
    db: OrmSession,
    provider: Callable[[], Provider] | None,
    policy: Policy,
    index: Callable[[], ActiveIndex],
    *,
    now: datetime | None = None,
    limit: int = 20,
) -> Stats:
    """Run up to `limit` due pre-review jobs, one claim at a time (`provider_jobs.run_each`).

    `provider` is None when pre-review is off or no provider is configured:
    due jobs then end `skipped`, without a call. `index` gives the active
    guidance as the poisoning screen holds it, for the similar entries.
    """

    def skip(held: Claim) -> None:
        claims.finish(db, PreReviewJob, held, "skipped", last_error="skipped: pre-review is off")

    def run(client: Provider, held: Claim) -> str:
        return run_one(db, client, policy, held, index, now=now)

    return provider_jobs.run_each(
        db, PreReviewJob, policy, provider, Stats(), run_one=run, skip=skip, now=now, limit=limit
    )


def run_one(
    db: OrmSession,
    provider: Provider,
    policy: Policy,
    held: Claim,
    index: Callable[[], ActiveIndex],
    *,
    now: datetime | None,
) -> str:
    """Pre-review one claimed proposal: 'noted', 'refused', 'retrying', 'failed' or 'skipped'."""
    entry = db.get(Guidance, held.subject)
    if entry is None or entry.status != "pending":
        claims.finish(
            db, PreReviewJob, held, "skipped", last_error="skipped: the entry is no longer pending"
        )
        return "skipped"
    fields = {
        name: getattr(entry, name)
        for name in ("type", "title", "text", "scope", "target", "severity")
    }
    text = pre_review.build_input(fields, pre_review.similar(db, index(), entry))
    key = entry.text_key
    db.commit()  # nothing held open while the provider thinks
    try:
        reply = provider.complete(
            system=pre_review.SYSTEM_PROMPT,
            messages=[Message.user(text)],
            max_output_tokens=pre_review.MAX_OUTPUT_TOKENS,
        )
    except ProviderError as exc:
        return provider_jobs.fail(db, PreReviewJob, policy, held, exc, now=now or utcnow())
    note = pre_review.note_of(reply.text)
    if note is None:
        # Paid for, but not a note we keep: no retry (the same question gets the
        # same kind of answer), no note, and the Cost card counts the call.
        claims.finish(
            db,
            PreReviewJob,
            held,
            "refused",
            last_error=f"dropped: the answer was not a note of the expected form "
            f"({len(reply.text)} characters, stop reason {reply.stop_reason!r})",
            **provider_jobs.usage(reply.usage),
        )
        return "refused"
    model = f"{provider.name}/{provider.model}" if provider.model else provider.name
    usage = provider_jobs.usage(reply.usage)
    if not claims.finish(db, PreReviewJob, held, "note", commit=False, last_error=None, **usage):
        return "skipped"
    if not pre_review.keep_note(db, held.subject, key, note, model, now=utcnow()):
        log.info("pre-review of entry %s: decided or edited meanwhile; note dropped", entry.id)
    db.commit()
    return "noted"
