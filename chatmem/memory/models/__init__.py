"""chatmem's own tables, all prefixed `chatmem_`, on their own metadata.

They live on a private declarative base rather than the host's `db.Model` so
that chatmem's migrations and `create_all` never touch the host's tables; the
host's Flask-SQLAlchemy session and engine still serve them. Users are the
host's: chatmem stores their id as a string and never owns a user table.

The tables are declared by theme in this package's modules (guidance, sessions,
held calls and tasks, jobs, tokens); import them from here.
"""

from .base import (
    CALL_OUTCOMES,
    CHANNELS,
    ENFORCED_SEVERITIES,
    GUIDANCE_TYPES,
    HELD_STATES,
    HIT_OUTCOMES,
    OUTCOMES,
    SEVERITIES,
    STATUSES,
    Base,
    iso,
    utcnow,
)
from .calls import HeldCall, Task
from .guidance import GUIDANCE_RECORD_COLUMNS, Guidance, GuidanceEvent, State, guidance_record
from .jobs import JOB_OUTCOMES, PRE_REVIEW_OUTCOMES, NotifyJob, PreReviewJob, SummaryJob
from .sessions import BlockUse, LedgerEntry, RecordsRevision, Session, Subscription
from .tokens import ApiToken

__all__ = [
    "CALL_OUTCOMES",
    "CHANNELS",
    "ENFORCED_SEVERITIES",
    "GUIDANCE_RECORD_COLUMNS",
    "GUIDANCE_TYPES",
    "HELD_STATES",
    "HIT_OUTCOMES",
    "JOB_OUTCOMES",
    "OUTCOMES",
    "PRE_REVIEW_OUTCOMES",
    "SEVERITIES",
    "STATUSES",
    "ApiToken",
    "Base",
    "BlockUse",
    "Guidance",
    "GuidanceEvent",
    "HeldCall",
    "LedgerEntry",
    "NotifyJob",
    "PreReviewJob",
    "RecordsRevision",
    "Session",
    "State",
    "Subscription",
    "SummaryJob",
    "Task",
    "guidance_record",
    "iso",
    "utcnow",
]
