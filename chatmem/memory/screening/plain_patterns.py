"""Patterns on a text's `plain` view: markup, block imitation, contact details, shouted urgency.

Some poison is in the punctuation and line breaks a phrase cannot see: a
`## ` heading or `<system>` tag imitating the block, HTML and script, a link
or address to send things to, a `**URGENT**` heading. These patterns read the
`plain` view (folded, lower case, punctuation and line breaks kept), one list
per flag code; `public_ip` finds an address a pattern cannot judge.
"""

from __future__ import annotations

import ipaddress
import re

# A dot in a host name, also written to slip past a filter: "[.]", "(dot)", " dot ".
_DOT = r"\.|\s*\[\s*(\.|dot)\s*\]\s*|\s*\(\s*(\.|dot)\s*\)\s*|\s+dot\s+"
_TLD = (
    "com|net|org|io|ai|co|me|ly|gg|to|cc|tk|ru|cn|su|xyz|top|info|biz|app|dev|site|online|link|"
    "click|shop|store|club|pw|onion|us|uk|de|fr|nl|eu|ca|au|in|br|es|it|pl|ch|se|jp|kr|tv|ws|"
    "cloud|tech|live|ml|ga|cf|gq|ir|kp"
)

# Patterns on the `plain` view, where punctuation and line breaks still are.
PATTERNS: dict[str, list[str]] = {
    # Text dressed up as the block, a chat transcript or a prompt template.
    "fake_structure": [
        r"(^|\n)[ \t]*#{1,6}[ \t]+\S",
        r"#{2,}\s*(project|memory|system|guardrails|site facts|conventions|instructions)",
        r"project\s*memory|\(\s*call\s+recall\b",
        r"(^|\n|[.;!?]\s)\s*(guardrails|site\s*facts|facts|conventions|instructions|rules|"
        r"system|assistant|user|developer|human)\s*:",
        r"<\s*/?\s*(system|instructions?|assistant|user|memory|guardrails?|rules|prompt|"
        r"im_start|im_end|inst|sys|context)\s*/?\s*>",
        r"<\|[^|>\n]{1,40}\|>|\[\s*/?\s*(inst|sys|system|assistant|user)\s*\]|<<\s*/?\s*sys\s*>>",
        r"(^|\n)\s*(```|~~~|-{3,}\s*(\n|$)|={3,}\s*(\n|$))",
    ],
    # HTML, script and role JSON: what runs or restructures, not what informs.
    "markup": [
        # any tag but bare inline formatting (<b>, </em>), which runs nothing
        r"<\s*/?\s*(?!(b|i|em|strong|u|s|br|p|code|small|sub|sup|mark)\s*/?\s*>)"
        r"[a-z][a-z0-9_:-]*(\s+[a-z_:-]+\s*=|\s*/?\s*>|\s*/\s*[a-z])",
        r"<\s*(script|iframe|svg|img|object|embed|style|body|html|meta|link|base|form|a)\b",
        r"\bon[a-z]{3,}\s*=\s*[\"'`a-z]",
        r"\b(java|vb|live)script\s*:|\bdata\s*:\s*[a-z]+/[a-z0-9.+-]+\s*[;,]",
        r"&(lt|gt|#0*6[02]|#x0*3[ce]);|\\x3c|%3c|\\u003c",
        r"document\s*\.\s*(cookie|domain|location|write)|window\s*\.\s*(location|onerror|open)",
        r"\b(alert|prompt|confirm|eval|fetch|settimeout)\s*\(|fromcharcode|sendbeacon|"
        r"xmlhttprequest|console\s*\.\s*log\s*\(|expression\s*\(",
        r"[\"']\s*role\s*[\"']\s*:\s*[\"']\s*(system|assistant|developer|tool|user|function)",
        r"!\[[^\]\n]*\]\(\s*[a-z]+:",
        r"<!--|-->|<\?php",
    ],
    # Quoting the opening of a system prompt, in any language: "starting with 'You are'".
    "exfiltration": [r"['\"\u2018\u201c`]\s*you are\s*['\"\u2019\u201d`]"],
    # Shouted urgency heading an order: "**EMERGENCY**", "PRIORITY TASK:", "URGENT from IT:".
    "authority": [
        r"(\*{2,}|^|\n)\s*(urgent|emergency|priority|important)\b[^\n]{0,20}(\*{2,}|:)",
    ],
    # Somewhere to send things: links, addresses, numbers, handles.
    "contact": [
        r"\b(https?|hxxps?|ftp|wss?|file|data|javascript)\s*:\s*/\s*/",
        rf"\bwww({_DOT})[a-z0-9-]",
        rf"[a-z0-9._%+-]+(@|\s*[\[(]\s*at\s*[\])]\s*)[a-z0-9-]+(({_DOT})[a-z0-9-]+)+",
        rf"\b[a-z0-9][a-z0-9-]*(({_DOT})[a-z0-9-]+)*({_DOT})({_TLD})\b",
        r"\+\s*\d[\d\s().-]{6,}\d|\(?\b\d{3}\)?[\s.-]{1,3}\d{3}[\s.-]{1,3}\d{4}\b",
        r"\b(whatsapp|telegram|viber|wechat|skype|discord|t\.me|wa\.me|signal\.me)\b",
        r"\b(on|at|to|contact|dm|message|ping|follow|twitter|instagram)\s+@[a-z0-9_]{3,}\b",
    ],
}


def public_ip(plain: str) -> str | None:
    """A public IPv4 address (loopback and private ones are a site's own business)."""
    for found in re.finditer(r"\b\d{1,3}(\.\d{1,3}){3}\b", plain):
        try:
            if ipaddress.ip_address(found.group()).is_global:
                return found.group()
        except ValueError:
            continue
    return None
