"""Every CHATMEM_* setting: its default, how it is read from text, and what it means.

`registry.py` keeps each key's default, meaning and parser (`SETTINGS`);
`parsers.py` the parsers; `typed.py` the frozen, typed `Settings` object the
code reads (`settings.jobs.lease` is a timedelta), built once per app by
`init_app`. A bad value raises `ConfigError` naming the key.
"""

from __future__ import annotations

from .parsers import (
    Parser,
    boolean,
    choice,
    integer,
    key_prefix,
    optional_text,
    optional_web_url,
    optional_word_list,
    positive_number,
    seconds_or_off,
    storage_uri,
    template_name,
    text,
    url_path,
    word_list,
)
from .registry import (
    DEFAULTS,
    SETTINGS,
    ConfigError,
    Setting,
    apply_defaults,
    coerce,
    from_environ,
    read,
    shown,
)
from .typed import (
    JobSettings,
    McpSettings,
    ProviderSettings,
    RateSettings,
    ScreenSettings,
    Settings,
)

__all__ = [
    "DEFAULTS",
    "SETTINGS",
    "ConfigError",
    "JobSettings",
    "McpSettings",
    "Parser",
    "ProviderSettings",
    "RateSettings",
    "ScreenSettings",
    "Setting",
    "Settings",
    "apply_defaults",
    "boolean",
    "choice",
    "coerce",
    "from_environ",
    "integer",
    "key_prefix",
    "optional_text",
    "optional_web_url",
    "optional_word_list",
    "positive_number",
    "read",
    "seconds_or_off",
    "shown",
    "storage_uri",
    "template_name",
    "text",
    "url_path",
    "word_list",
]
