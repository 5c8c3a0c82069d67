"""The Memory screen (SPEC §8): one blueprint, its routes split by what they serve.

`routes` has the guidance tabs and settings, `held` the Waiting calls tab,
`upkeep` the Upkeep page (staleness, review pace, cost), `desk` and
`desk_view` the review desk (Replace, bulk actions; filters, evidence),
`access` who may use the screen, `view` what the templates are given.
"""

from . import desk as _desk  # noqa: F401 - registers the review desk's actions
from . import held as _held  # noqa: F401 - registers the Waiting calls routes
from . import upkeep as _upkeep  # noqa: F401 - registers the Upkeep page
from .routes import bp

__all__ = ["bp"]
