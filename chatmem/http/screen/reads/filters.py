"""Search, filters and sort for the Memory screen's guidance tabs (issue 15, point 5).

A tab's list narrowed by the URL's query: `q` (a topic over title and text,
through recall's indexed substring predicate), `type`, `scope`, `origin`,
`target` (the kind of target) and `sort`; on Pending also `lane` (one triage
lane, `chatmem.memory.lanes`). Every value is checked: an
unknown one is refused with `invalid_params` naming the field, so a typo
never silently shows everything. The page number is clamped as elsewhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import ColumnElement, and_, func, not_, or_, select
from sqlalchemy.orm import Session as OrmSession

from ....errors import InvalidParams
from ....memory import lanes
from ....memory.fields import SCOPE_MAX
from ....memory.listing import _TAB_ORDER, _TAB_STATUS, PER_PAGE, Page, clamp_page
from ....memory.models import GUIDANCE_TYPES, Guidance
from ....memory.recall import topic_filter
from ....text import hidden_characters

Q_MAX = 200
ORIGINS = ("agent", "admin")
TARGET_KINDS = ("tool", "post_id", "post_type", "label", "none")
SORTS = ("newest", "oldest", "title", "hits")
SCOPES_SHOWN = 50  # the scope filter's suggestions
GLOBAL = "global"  # an entry without a scope applies everywhere


@dataclass(frozen=True)
class Filters:
    q: str = ""
    type: str = ""
    scope: str = ""
    origin: str = ""
    target: str = ""
    sort: str = "newest"
    lane: str = ""  # Pending's triage lane; "" for all of them

    @property
    def narrowed(self) -> bool:
        """Whether any filter (not the sort, nor the lane, which has its own count) is set."""
        return any((self.q, self.type, self.scope, self.origin, self.target))

    def params(self) -> dict[str, str]:
        """The query parameters that reproduce these filters (for links)."""
        return {k: v for k, v in asdict(self).items() if v and not (k == "sort" and v == "newest")}

    def in_lane(self, lane: str) -> dict[str, str]:
        """These filters in another lane ("" for all lanes), for the lane links."""
        return {k: v for k, v in self.params().items() if k != "lane"} | (
            {"lane": lane} if lane else {}
        )


def _choice(args: Mapping[str, Any], name: str, allowed: tuple[str, ...], default: str = "") -> str:
    value = str(args.get(name) or "").strip()
    if value and value not in allowed:
        raise InvalidParams(f"{name} must be one of {', '.join(allowed)}.", details={"field": name})
    return value or default


def _text(args: Mapping[str, Any], name: str, limit: int) -> str:
    value = " ".join(str(args.get(name) or "").split())
    if hidden_characters(value):  # NUL and the like: PostgreSQL refuses them in a query
        raise InvalidParams(
            f"{name} holds invisible or control characters.", details={"field": name}
        )
    if len(value) > limit:
        raise InvalidParams(f"{name} is longer than {limit} characters.", details={"field": name})
    return value


def parse(args: Mapping[str, Any]) -> Filters:
    """The filters of a request's query (or a form echoing them); bad values are refused."""
    return Filters(
        q=_text(args, "q", Q_MAX),
        type=_choice(args, "type", GUIDANCE_TYPES),
        scope=_text(args, "scope", SCOPE_MAX),
        origin=_choice(args, "origin", ORIGINS),
        target=_choice(args, "target", TARGET_KINDS),
        sort=_choice(args, "sort", SORTS, "newest"),
        lane=lanes.choose(args.get("lane")),
    )


def _target_kind(kind: str) -> ColumnElement[bool]:
    target = func.lower(Guidance.target)
    post_id = or_(target.like("post_id:%"), target.like("id:%"))
    post_type = target.like("post_type:%")
    if kind == "post_id":
        return post_id
    if kind == "post_type":
        return post_type
    if kind == "label":
        return target.like("label:%")
    if kind == "none":
        return or_(Guidance.target.is_(None), Guidance.target == "")
    # A tool: `tool:slug` or a bare slug (a target with no other prefix).
    return and_(
        Guidance.target.is_not(None),
        Guidance.target != "",
        or_(target.like("tool:%"), not_(target.like("%:%"))),
    )


def conditions(db: OrmSession, tab: str, filters: Filters) -> list[ColumnElement[bool]]:
    found: list[ColumnElement[bool]] = [Guidance.status == _TAB_STATUS[tab]]
    if filters.q:
        columns = (Guidance.title, Guidance.text)
        found.append(
            topic_filter(db, "chatmem_guidance", Guidance.id, columns, filters.q, scan=False)
        )
    if filters.type:
        found.append(Guidance.type == filters.type)
    if filters.scope:
        scope = func.lower(Guidance.scope) == filters.scope.lower()
        if filters.scope.lower() == GLOBAL:
            scope = or_(scope, Guidance.scope.is_(None))
        found.append(scope)
    if filters.origin:
        found.append(Guidance.origin == filters.origin)
    if filters.target:
        found.append(_target_kind(filters.target))
    return found


def _order(tab: str, sort: str) -> tuple[Any, ...]:
    newest: tuple[Any, ...] = _TAB_ORDER[tab]
    if sort == "oldest":
        return tuple(column.asc() for column in (newest[0].element, Guidance.id))
    if sort == "title":
        return (func.lower(Guidance.title), Guidance.id)
    if sort == "hits":
        return (Guidance.hits.desc(), *newest)
    return newest


def page(db: OrmSession, tab: str, filters: Filters, number: Any) -> Page:
    """One page of a guidance tab with these filters; `total` counts the matches."""
    where = conditions(db, tab, filters)
    total = int(db.scalar(select(func.count()).select_from(Guidance).where(*where)) or 0)
    current = clamp_page(number, total)
    query = (
        select(Guidance)
        .where(*where)
        .order_by(*_order(tab, filters.sort))
        .limit(PER_PAGE)
        .offset((current - 1) * PER_PAGE)
    )
    return Page(list(db.scalars(query)), current, total)


def matching_ids(db: OrmSession, tab: str, filters: Filters) -> list[int]:
    """Every match's id in the chosen order: Pending's lanes page through them themselves."""
    where = conditions(db, tab, filters)
    return list(db.scalars(select(Guidance.id).where(*where).order_by(*_order(tab, filters.sort))))


def scopes(db: OrmSession) -> list[str]:
    """The scopes in use, for the filter's suggestions (bounded)."""
    query = (
        select(Guidance.scope)
        .where(Guidance.scope.is_not(None))
        .group_by(Guidance.scope)
        .order_by(Guidance.scope)
        .limit(SCOPES_SHOWN)
    )
    return [s for s in db.scalars(query) if s]
