"""What the token lists show and accept: the "expires in days" field at its
bounds, a token's state at the second it expires, the live count, and the
Memory screen's pages of every user's tokens (revoked last, newest first).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import update

from chatmem import InvalidParams
from chatmem.auth import tokens
from chatmem.memory.listing import PER_PAGE
from chatmem.memory.models import ApiToken, utcnow

MAX = tokens.EXPIRES_DAYS_MAX


@pytest.mark.parametrize(
    ("raw", "days"),
    # Nineteen digits are a number still (zeros in front, as a form may send them).
    [(None, None), ("", None), ("  ", None), ("1", 1), (f" {MAX} ", MAX), ("0" * 18 + "7", 7)],
)
def test_expires_in_days_takes_empty_or_1_to_the_maximum(raw: Any, days: int | None) -> None:
    assert tokens.expires_in_days(raw) == (timedelta(days=days) if days else None)


@pytest.mark.parametrize("raw", ["0", "-1", str(MAX + 1), "1.5", "a week", "9" * 5000, "٣"])
def test_any_other_expiry_is_refused_naming_the_field(raw: str) -> None:
    with pytest.raises(InvalidParams) as caught:
        tokens.expires_in_days(raw)
    assert caught.value.to_dict() == {
        "code": "invalid_params",
        "message": f"expires_days must be a whole number of days from 1 to {MAX}, "
        "or empty for no expiry.",
        "field": "expires_days",
    }


def test_a_token_is_expired_from_the_second_its_expiry_comes(db: Any) -> None:
    token, _plain = tokens.create(db.session(), user_id="2", expires_in=timedelta(days=1))
    assert token.expires_at is not None
    assert tokens.state_of(token, token.expires_at - timedelta(microseconds=1)) == "active"
    assert tokens.state_of(token, token.expires_at) == "expired"
    forever, _plain = tokens.create(db.session(), user_id="2")
    assert tokens.state_of(forever, utcnow() + timedelta(days=10_000)) == "active"
    forever.revoked_at = utcnow()
    assert tokens.state_of(forever) == "revoked"


def test_the_live_count_leaves_out_revoked_and_expired_tokens(db: Any) -> None:
    tokens.create(db.session(), user_id="2")  # no expiry
    tokens.create(db.session(), user_id="2", expires_in=timedelta(days=3))  # expires later
    expired, _plain = tokens.create(db.session(), user_id="2", expires_in=timedelta(days=1))
    revoked, _plain = tokens.create(db.session(), user_id="1")
    db.session.execute(
        update(ApiToken)
        .where(ApiToken.id == expired.id)
        .values(expires_at=utcnow() - timedelta(seconds=1))
    )
    db.session.execute(
        update(ApiToken).where(ApiToken.id == revoked.id).values(revoked_at=utcnow())
    )
    db.session.commit()
    assert tokens.live_count(db.session()) == 2


def test_the_screen_pages_every_token_revoked_last_newest_first(db: Any) -> None:
    made = [
        tokens.create(db.session(), user_id=str(1 + i % 2), name=f"t{i}")[0].id for i in range(57)
    ]
    gone = made[-1]
    db.session.execute(update(ApiToken).where(ApiToken.id == gone).values(revoked_at=utcnow()))
    db.session.commit()
    live_newest_first = sorted(made[:-1], reverse=True)

    first = tokens.page(db.session(), None)
    assert (first.number, first.total) == (1, 57)
    assert [t.id for t in first.items] == live_newest_first[:PER_PAGE]
    second = tokens.page(db.session(), "2")
    assert (second.number, second.total) == (2, 57)
    assert [t.id for t in second.items] == [*live_newest_first[PER_PAGE:], gone]
    assert tokens.page(db.session(), "99").number == 2, "past the end: the last page"
    assert tokens.page(db.session(), "page two").number == 1


def test_no_tokens_is_one_empty_page(db: Any) -> None:
    empty = tokens.page(db.session(), "3")
    assert (empty.number, empty.total, empty.items) == (1, 0, [])


def test_the_live_count_drops_a_token_at_the_instant_it_expires(
    db: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As `state_of` says `expired` from its expiry on, the tab's count leaves it out then."""
    token, _plain = tokens.create(db.session(), user_id="2", expires_in=timedelta(days=1))
    assert token.expires_at is not None
    at = token.expires_at
    monkeypatch.setattr(tokens, "utcnow", lambda: at - timedelta(microseconds=1))
    assert tokens.live_count(db.session()) == 1
    monkeypatch.setattr(tokens, "utcnow", lambda: at)
    assert tokens.live_count(db.session()) == 0
    assert tokens.state_of(token, at) == "expired"


def test_the_token_list_is_in_making_order_after_an_update(db: Any) -> None:
    """On PostgreSQL an updated row moves to the end of its table: the list still does not."""
    made = [tokens.create(db.session(), user_id="2", name=f"t{n}")[0].id for n in range(3)]
    db.session.execute(update(ApiToken).where(ApiToken.id == made[0]).values(name="renamed"))
    db.session.commit()
    assert [t.id for t in tokens.list_tokens(db.session())] == made
    assert [t.id for t in tokens.list_tokens(db.session(), user_id="2")] == made
