"""MCP tasks at the domain's level (chatmem/memory/tasks.py), on a real database.

What tests/test_mcp_tasks.py cannot steer over HTTP: the exact instant a
claimed run counts as cut off, a grant that runs out between two polls, and
the races of two requests on one task (made twice at once, claimed by
another worker, cancelled while its call runs), played in a fixed order with
a second database session standing for the other request. The call a task
runs goes through the one dispatch path, as the MCP endpoint's does.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import event, select, update
from sqlalchemy.orm import Session

from chatmem.errors import ChatmemError
from chatmem.memory import tasks
from chatmem.memory.models import Guidance, HeldCall, LedgerEntry, Task
from tests.test_ask_severity import CALL, EDITOR, ask, held_call, outcomes
from tests.test_held import MINUTES, allowed_call, at_second, decide_at

TTL = 60_000
WAITING = "Waiting for a curator."


def run_as_editor(memory: Any) -> tasks.Run:
    """The task's run as the MCP endpoint makes it: the held call, through dispatch."""

    def run(request: HeldCall) -> tuple[dict[str, Any], bool]:
        try:
            return memory.call_tool(request.tool, request.arguments, user=EDITOR), False
        except ChatmemError as error:
            return {"error": error.to_dict()}, True

    return run


def task_of(db: Any, request_id: int) -> Task:
    """The task a client asking about this held call is given."""
    return tasks.for_held(
        db.session(),
        user_id=str(EDITOR.id),
        tool="update-post",
        request_id=request_id,
        message=WAITING,
        ttl_ms=TTL,
    )


@pytest.fixture
def other_request(db: Any) -> Iterator[Session]:
    """A second request's own database session, as another worker's would be."""
    with Session(db.engine) as session:
        yield session


def title_of(app: Any, db: Any, post_id: int) -> str:
    db.session.expire_all()
    return str(db.session.get(app.extensions["test_host"]["Post"], post_id).title)


def test_two_requests_making_one_held_calls_task_at_once_both_get_the_first(
    db: Any, memory: Any, other_request: Session
) -> None:
    """The second INSERT breaks the one-task-per-held-call rule; it answers the first's task."""
    ask(db)
    request_id = held_call(memory)
    earlier = tasks.finished(  # another task of the same user, that no lookup may return
        db.session(), user_id=str(EDITOR.id), tool="recall", answer={}, failed=False, ttl_ms=TTL
    )
    first: list[Task] = []

    def the_other_request_commits_first(_session: Session) -> None:
        made = tasks.for_held(
            other_request,
            user_id=str(EDITOR.id),
            tool="update-post",
            request_id=request_id,
            message=WAITING,
            ttl_ms=TTL,
        )
        first.append(made)

    session = db.session()
    event.listen(session, "before_commit", the_other_request_commits_first, once=True)
    try:
        task = task_of(db, request_id)
    finally:
        if event.contains(session, "before_commit", the_other_request_commits_first):
            event.remove(session, "before_commit", the_other_request_commits_first)
    assert first, "the other request did not run"
    assert task.id == first[0].id != earlier.id
    assert tasks.describe(task)["status"] == "working"
    assert db.session.scalars(select(Task.id).where(Task.held_call_id == request_id)).all() == [
        task.id
    ]


def test_tasks_made_in_the_same_instant_page_in_id_order_none_skipped_or_twice(db: Any) -> None:
    """The cursor goes on from (created_at, id): a page must end where the next one starts."""
    instant = at_second()
    ids = [f"task-{letter}" for letter in "abcdef"]  # made in this order, in one instant
    for task_id in ids:
        db.session.add(
            Task(
                id=task_id,
                user_id=str(EDITOR.id),
                tool="recall",
                status=tasks.COMPLETED,
                result={},
                created_at=instant,
                updated_at=instant,
                ttl_ms=TTL,
            )
        )
    db.session.commit()
    seen: list[list[str]] = []
    after = None
    while True:
        page = tasks.listed(db.session(), str(EDITOR.id), after=after, limit=2)
        if not page:
            break
        seen.append([task.id for task in page])
        after = page[-1].id
    assert seen == [["task-f", "task-e"], ["task-d", "task-c"], ["task-b", "task-a"]]


def test_polling_a_task_that_has_ended_changes_nothing(db: Any, memory: Any) -> None:
    """The task failed (the request could not keep the call's key); its grant runs out
    later: a poll of the ended task neither ledgers nor moves the request."""
    rule = ask(db)
    now = at_second()
    secret_call = {**CALL, "api_key": "a1B2c3D4e5F6g7H8i9J0kLmNoPqRsTuV"}
    request_id = allowed_call(db, rule, now, secret_call)
    task = task_of(db, request_id)
    run = run_as_editor(memory)
    ended = tasks.advance(db.session(), task, run, now=now)
    assert ended.status == tasks.FAILED
    assert ended.status_message is not None and "make exactly the same call" in ended.status_message
    before = outcomes(db)
    later = tasks.advance(db.session(), ended, run, now=now + timedelta(minutes=MINUTES))
    assert (later.status, later.status_message) == (tasks.FAILED, ended.status_message)
    assert outcomes(db) == before
    db.session.expire_all()
    assert db.session.get(HeldCall, request_id).state == "allowed"


def claimed(db: Any, task_id: str, at: datetime) -> None:
    """Another worker's claim of the task's run (its UPDATE), committed."""
    db.session.execute(update(Task).where(Task.id == task_id).values(run_at=at))
    db.session.commit()


def test_a_claimed_run_is_cut_off_exactly_one_lease_after_it_began(db: Any, memory: Any) -> None:
    ask(db)
    task_id = task_of(db, held_call(memory)).id
    began = at_second()
    claimed(db, task_id, began)
    run = run_as_editor(memory)
    just_before = began + tasks.RUN_LEASE - timedelta(microseconds=1)
    still = tasks.advance(db.session(), db.session.get(Task, task_id), run, now=just_before)
    assert (still.status, still.status_message) == (tasks.WORKING, WAITING)
    cut = tasks.advance(db.session(), still, run, now=began + tasks.RUN_LEASE)
    assert (cut.status, cut.status_message) == (tasks.FAILED, tasks.CUT_OFF)
    assert "granted-run" not in outcomes(db)


def test_a_grant_that_ran_out_fails_its_own_task_with_the_refusal_and_no_other(
    app: Any, db: Any, memory: Any
) -> None:
    rule = ask(db)
    now = at_second()
    mine = allowed_call(db, rule, now)
    theirs = allowed_call(db, rule, now, {**CALL, "title": "Another sale"})
    task, other = task_of(db, mine), task_of(db, theirs)
    ran_out = now + timedelta(minutes=MINUTES)
    failed = tasks.advance(db.session(), task, run_as_editor(memory), now=ran_out)
    message = (
        f"update-post was refused by project memory guardrail #{rule} (Ask before the header): "
        f"request #{mine} for this call was expired: its approval expired unused."
    )
    assert (failed.status, failed.status_message) == (tasks.FAILED, message)
    assert failed.result == {
        "error": {
            "code": "blocked_by_memory",
            "message": message,
            "guidance_id": rule,
            "title": "Ask before the header",
            "target": "post_id:3",
            "request_id": mine,
            "state": "expired",
        }
    }
    assert title_of(app, db, 3) != CALL["title"]  # the call was not made
    db.session.expire_all()
    assert db.session.get(HeldCall, mine).state == "expired"
    assert db.session.get(HeldCall, theirs).state == "allowed"  # not this task's to expire
    assert db.session.get(Task, other.id).status == tasks.WORKING
    assert outcomes(db).count("expired") == 1


def test_a_run_another_worker_claimed_is_not_claimed_or_run_again(
    app: Any, db: Any, memory: Any, other_request: Session
) -> None:
    """This request read the task before the other claimed it: the claim is what counts."""
    rule = ask(db)
    now = at_second()
    request_id = allowed_call(db, rule, now)
    task = task_of(db, request_id)
    assert task.run_at is None  # as this request read it
    other_request.execute(update(Task).where(Task.id == task.id).values(run_at=now))
    other_request.commit()
    polled = tasks.advance(db.session(), task, run_as_editor(memory), now=now)
    assert (polled.status, polled.run_at) == (tasks.WORKING, now)
    assert "granted-run" not in outcomes(db)
    assert title_of(app, db, 3) != CALL["title"]
    db.session.expire_all()
    assert db.session.get(HeldCall, request_id).state == "allowed"


def test_a_task_cancelled_while_its_call_runs_stays_cancelled(
    db: Any, memory: Any, other_request: Session
) -> None:
    """A task that has ended keeps its status: the run's answer does not overwrite it."""
    rule = ask(db)
    now = at_second()
    task = task_of(db, allowed_call(db, rule, now))
    run = run_as_editor(memory)

    def run_then_cancelled(request: HeldCall) -> tuple[dict[str, Any], bool]:
        answer = run(request)
        mine = other_request.get(Task, task.id)
        assert mine is not None
        tasks.cancel(other_request, mine, actor_id=str(EDITOR.id))
        return answer

    ended = tasks.advance(db.session(), task, run_then_cancelled, now=now)
    assert (ended.status, ended.status_message, ended.result) == (
        tasks.CANCELLED,
        "The task was cancelled by request.",
        None,
    )
    assert outcomes(db).count("granted-run") == 1


def test_a_refusal_names_no_target_for_a_guardrail_whose_target_was_cleared(
    db: Any, memory: Any
) -> None:
    rule = ask(db)
    now = at_second()
    task = task_of(db, held_call(memory))
    request_id = task.held_call_id
    assert request_id is not None
    decide_at(db, request_id, "deny", now, note="not today")
    entry = db.session.get(Guidance, rule)
    entry.target = None  # edited since: the guardrail names no target any more
    db.session.commit()
    failed = tasks.advance(db.session(), task, run_as_editor(memory), now=now)
    assert failed.status == tasks.FAILED
    assert failed.result is not None
    error = failed.result["error"]
    assert (error["target"], error["state"], error["title"]) == (
        "",
        "denied",
        "Ask before the header",
    )
    assert "a curator denied it (not today)" in error["message"]
    assert db.session.scalars(select(LedgerEntry.outcome)).all().count("granted-run") == 0


def test_expired_tasks_not_yet_swept_do_not_hide_an_older_live_one(db: Any) -> None:
    """One live task under four newer ones past their ttl: a page of two still finds it."""
    now = at_second()
    made = [("live", now - timedelta(minutes=1), 3_600_000)]
    made += [(f"gone-{n}", now - timedelta(seconds=5 - n), 1000) for n in range(4)]
    for task_id, created, ttl in made:
        db.session.add(
            Task(
                id=task_id,
                user_id=str(EDITOR.id),
                tool="recall",
                status=tasks.COMPLETED,
                result={},
                created_at=created,
                updated_at=created,
                ttl_ms=ttl,
            )
        )
    db.session.commit()
    page = tasks.listed(db.session(), str(EDITOR.id), after=None, limit=2)
    assert [task.id for task in page] == ["live"]


def test_a_task_cancelled_after_this_request_read_it_is_not_run(
    app: Any, db: Any, memory: Any, other_request: Session
) -> None:
    """This request read the task working and its grant allowed; another cancelled both
    before the claim: the claim takes only a task still working, so nothing runs."""
    rule = ask(db)
    now = at_second()
    request_id = allowed_call(db, rule, now)
    task = task_of(db, request_id)
    before = outcomes(db)  # (it expires what the session holds: read the two below after it)
    assert (task.status, task.run_at) == (tasks.WORKING, None)  # as this request read it
    grant = db.session.get(HeldCall, request_id)  # held: the session keeps it while we do
    assert grant.state == "allowed"
    theirs = other_request.get(Task, task.id)
    assert theirs is not None
    tasks.cancel(other_request, theirs, actor_id=str(EDITOR.id))
    gc.collect()  # what the session holds weakly and nobody else does would be read afresh
    polled = tasks.advance(db.session(), task, run_as_editor(memory), now=now)
    assert (polled.status, polled.run_at) == (tasks.CANCELLED, None)
    assert outcomes(db) == [*before, "cancelled"]  # the withdrawal only: no call made or held
    assert title_of(app, db, 3) != CALL["title"]


@pytest.mark.parametrize(
    ("asked", "kept"),
    [(1, 1000), (999, 1000), (1000, 1000), (1001, 1001), (tasks.TTL_MAX_MS + 1, tasks.TTL_MAX_MS)],
)
def test_a_ttl_is_kept_between_a_second_and_the_cap(asked: int, kept: int) -> None:
    assert tasks.ttl_of(asked) == kept


def test_a_held_calls_new_task_was_last_updated_when_it_was_made(
    db: Any, memory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One clock read dates it: createdAt and lastUpdatedAt are the same instant."""
    ask(db)
    request_id = held_call(memory)
    made_at = at_second() - timedelta(minutes=5)
    monkeypatch.setattr(tasks, "utcnow", lambda: made_at)
    task_id = task_of(db, request_id).id
    db.session.expire_all()
    row = db.session.get(Task, task_id)
    assert (row.created_at, row.updated_at) == (made_at, made_at)


def test_a_task_is_gone_at_the_instant_its_ttl_ends(db: Any, memory: Any) -> None:
    """As the sweep reckons it (`expire_due`): found until the end, not at it."""
    ask(db)
    task = task_of(db, held_call(memory))
    ends = task.created_at + timedelta(milliseconds=task.ttl_ms)
    user = str(EDITOR.id)
    assert tasks.find(db.session(), task.id, user, now=ends - timedelta(microseconds=1)) == task
    with pytest.raises(ChatmemError, match="past its ttl"):
        tasks.find(db.session(), task.id, user, now=ends)
