"""The Memory screen (SPEC §8): one blueprint, its routes split by what they serve.

`blueprint` has the blueprint and what holds for all of it (headers, the
CSRF and outage answers, the layout), `pages` the tabs (one view builder per
tab) and an entry's pages, `actions` the actions on guidance and the
settings, `transfer` export and import, `tokens` revoking API tokens,
`people` erasing a person, `held` the Waiting calls tab, `upkeep` the Upkeep
page (staleness, review pace, cost), `desk` and `desk_view` the review desk
(Replace, bulk actions; filters, evidence), `lanes_view` Pending's triage
lanes, `group_actions` one decision for a group of near-duplicates, `forms` how an action reads its
fields and answers, `access` who may use the screen, `view` what the
templates are given.
What an action does to an entry is the domain's (`chatmem.memory.curation`).
"""

from . import actions as _actions  # noqa: F401 - registers the actions on guidance
from . import desk as _desk  # noqa: F401 - registers the review desk's actions
from . import group_actions as _group_actions  # noqa: F401 - registers group decisions
from . import held as _held  # noqa: F401 - registers the Waiting calls routes
from . import pages as _pages  # noqa: F401 - registers the pages
from . import people as _people  # noqa: F401 - registers erasing a person
from . import tokens as _tokens  # noqa: F401 - registers the token routes
from . import transfer as _transfer  # noqa: F401 - registers export and import
from . import upkeep as _upkeep  # noqa: F401 - registers the Upkeep page
from .blueprint import bp

__all__ = ["bp"]
