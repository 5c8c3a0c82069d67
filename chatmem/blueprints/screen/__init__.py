"""The Memory screen (SPEC §8): one blueprint, its routes split by what they serve.

`routes` has the guidance tabs and settings, `held` the Waiting calls tab,
`access` who may use the screen, `view` what the templates are given.
"""

from . import held as _held  # noqa: F401 - registers the Waiting calls routes
from .routes import bp

__all__ = ["bp"]
