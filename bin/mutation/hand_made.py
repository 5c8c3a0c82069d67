"""The hand-made mutants: module-level constants and regexes, which mutmut does not mutate."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HandMutant:
    target: str
    original: str
    mutated: str
    function: str = "module constant"
    #: What the report and tests/MUTANTS.md show (removed, added): default the two texts.
    shown: tuple[str, str] | None = None


#: Module-level constants and regexes, which mutmut does not mutate.
HAND_MADE = [
    HandMutant("tools", r'r"^[a-zA-Z0-9_-]{1,64}$"', r'r"^[a-zA-Z0-9_-]{1,65}$"'),
    HandMutant("tools", r'r"^[a-zA-Z0-9_-]{1,64}$"', r'r"^[a-zA-Z0-9_./-]{1,64}$"'),
    HandMutant("tools", r'r"^[a-zA-Z0-9_-]{1,64}$"', r'r"^[a-zA-Z0-9_-]{2,64}$"'),
    HandMutant("tools", r'r"\s*[+]?\d{1,19}\s*"', r'r"[+]?\d{1,19}\s*"'),
    HandMutant("tools", r'r"\s*[+]?\d{1,19}\s*"', r'r"\s*[+]?\d{1,19}"'),
    HandMutant("tools", r'r"\s*[+]?\d{1,19}\s*"', r'r"\s*\d{1,19}\s*"'),
    HandMutant("tools", r'r"\s*[+]?\d{1,19}\s*"', r'r"\s*[+-]?\d{1,19}\s*"'),
    HandMutant("tools", r'r"\s*[+]?\d{1,19}\s*"', r'r"\s*[+]?\d{1,20}\s*"'),
    HandMutant(
        "tools",
        "    func: Callable[..., Any]\n    read_only: bool = False\n",
        "    func: Callable[..., Any]\n    read_only: bool = True\n",
    ),
    HandMutant("tools", 'capability: str = "edit_posts"', 'capability: str = "manage_options"'),
    HandMutant("tools", "    memory: bool = False\n", "    memory: bool = True\n"),
    HandMutant("guardrail_targets", 'ID_KEYS = ("post_id", "id")', 'ID_KEYS = ("post_id",)'),
    HandMutant("guardrail_targets", 'ID_KEYS = ("post_id", "id")', 'ID_KEYS = ("id",)'),
    HandMutant("guardrail_targets", 'ID_KEYS = ("post_id", "id")', 'ID_KEYS = ("id", "post_id")'),
    HandMutant("guardrail_targets", r'r"[+]?\d+"', r'r"\d+"'),
    HandMutant("guardrail_targets", r'r"[+]?\d+"', r'r"[+]?\d*"'),
    HandMutant("block", "LIMIT = 1500", "LIMIT = 1501"),
    HandMutant("block", "LIMIT = 1500", "LIMIT = 1499"),
    HandMutant("block", 'HEADER = "## Project memory"', 'HEADER = "## Project Memory"'),
    HandMutant("block", 'FOOTER = "(Call recall', 'FOOTER = "(call recall'),
    HandMutant("block", '"guardrail": "Guardrails"', '"guardrail": "Guardrail"'),
    HandMutant("block", '"fact": "Site facts"', '"fact": "Facts"'),
    HandMutant("block", '"convention": "Conventions"', '"convention": "Convention"'),
    HandMutant("block", '"instruction": "Instructions"', '"instruction": "Instruction"'),
    HandMutant("block", '"warn": 2, "info": 3', '"warn": 3, "info": 2'),
    HandMutant("block", '"block": 0, "ask": 1', '"block": 1, "ask": 0'),
    HandMutant("block", '"ask": 1, "warn": 2', '"ask": 2, "warn": 1'),
    HandMutant("block", "None: 4}", "None: 0}"),
    HandMutant("block", 'SEPARATOR = "; "', 'SEPARATOR = ", "'),
    HandMutant("block", 'SEPARATOR = "; "', 'SEPARATOR = ";  "'),
    HandMutant("ledger", 'SKIPPED_IN_DIGEST = ("save-session-summary",)', "SKIPPED_IN_DIGEST = ()"),
    HandMutant("text", "_LISTED_MAX = 10", "_LISTED_MAX = 9"),
    HandMutant("text", "(0x200B, 0x200B),", "(0x200C, 0x200C),"),
    HandMutant("text", "(0x200E, 0x200F),", "(0x200F, 0x200F),"),
    HandMutant("text", "(0xE0000, 0xE0FFF),", "(0xE0000, 0xE007F),"),
    HandMutant("text", "for p in range(1, 15))", "for p in range(1, 14))"),
    HandMutant("text", r'r"[\x00-\x08\x0b-\x1f\x7f]"', r'r"[\x00-\x08\x0b-\x1e\x7f]"'),
    HandMutant("text", r'"|[\ufe0e\ufe0f](?<![^\\s', r'"|[\ufe0e\ufe0f](?<![^'),
    HandMutant("text", r'_WORD = re.compile(r"[^\W_]+")', r'_WORD = re.compile(r"\w+")'),
    HandMutant(
        "text", r'_ASCII_LETTER = re.compile(r"[A-Za-z]")', r'_ASCII_LETTER = re.compile(r"[a-z]")'
    ),
    HandMutant("secret_shapes", '_SHORTEST = len("pwd=x")', '_SHORTEST = len("pwd=xy")'),
    HandMutant("secret_shapes", r'_START = r"(?<![A-Za-z0-9])"', r'_START = r"(?<![A-Za-z0-9_=])"'),
    HandMutant("secret_shapes", r'r"sk-ant-[A-Za-z0-9_-]{20,}"', r'r"sk-ant-[A-Za-z0-9_-]{21,}"'),
    HandMutant("secret_shapes", r'r"A[KS]IA[A-Z0-9]{16}(?![A-Z0-9])"', r'r"A[KS]IA[A-Z0-9]{16}"'),
    HandMutant("secret_shapes", r'r"cm_[A-Za-z0-9_-]{20,}"', r'r"cm_[A-Za-z0-9]{20,}"'),
    HandMutant("secret_shapes", '"IA", "AIza"', '"AIza"'),
    # A link's password only after https:// (not http://, redis://, postgres://, ...).
    HandMutant("secret_shapes", r'r"://(?P<secret>[^\s/?#:', r'r"https://(?P<secret>[^\s/?#:'),
    HandMutant(
        "secret_shapes", r'("url_credentials", ("://",)', r'("url_credentials", ("https://",)'
    ),
    HandMutant("secret_shapes", '"earer", "EARER"', '"EARER"'),
    HandMutant("secret_keys", '    "cookie": "token",\n', ""),
    HandMutant("secret_keys", '    "passphrase": "password",\n', ""),
    HandMutant("secret_keys", '"b64", "base64", "raw", "hash"', '"b64", "base64", "raw"'),
    HandMutant(
        "secret_shapes", '_PLACEHOLDERS: set[str] = {"", "null",', '_PLACEHOLDERS: set[str] = {"",'
    ),
    HandMutant("redaction", "_PROSE_WORD_MAX = 20", "_PROSE_WORD_MAX = 21"),
    HandMutant("redaction", "_MAX_DEPTH = 6", "_MAX_DEPTH = 5"),
    HandMutant("redaction", "_MAX_ITEMS = 50", "_MAX_ITEMS = 51"),
    HandMutant("token_check", 'TOKEN_PREFIX = "cm_"', 'TOKEN_PREFIX = "cm"'),
    HandMutant("tokens", "NAME_MAX = 100", "NAME_MAX = 101"),
    HandMutant("token_check", "_TOUCH_EVERY = timedelta(minutes=1)", "_TOUCH_EVERY = timedelta(0)"),
    HandMutant("token_check", "KNOWN_MAX = 10_000", "KNOWN_MAX = 0"),
    HandMutant("bearer", "SESSION_KEY_MAX = 200", "SESSION_KEY_MAX = 201"),
]
