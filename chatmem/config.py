"""The old home of the settings registry, kept so `from chatmem.config import from_environ` works.

Everything lives in `chatmem.settings` now.
"""

from __future__ import annotations

from .settings import DEFAULTS, SETTINGS, ConfigError, Setting, from_environ

__all__ = ["DEFAULTS", "SETTINGS", "ConfigError", "Setting", "from_environ"]
