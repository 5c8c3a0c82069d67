"""What the Connect page shows: ready-to-paste MCP client configurations.

Kept apart from the views so the page and its tests build the same JSON.
Each client gets the chatmem endpoint's URL and an `Authorization` header:
the token just created when there is one, else a placeholder to replace.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

PLACEHOLDER = "<your token>"


@dataclass(frozen=True)
class ClientConfig:
    """One MCP client's configuration: where it goes and what to paste."""

    key: str  # an id for the page's copy button
    client: str
    where: str
    text: str  # the JSON, as pasted


def mcp_configs(url: str, token: str | None) -> list[ClientConfig]:
    """`mcpServers` JSON for Claude Code, Cursor and Claude Desktop."""
    authorization = f"Bearer {token or PLACEHOLDER}"
    headers = {"Authorization": authorization}
    configs = [
        (
            "claude-code",
            "Claude Code",
            ".mcp.json in your project (or: claude mcp add --transport http)",
            {"type": "http", "url": url, "headers": headers},
        ),
        (
            "cursor",
            "Cursor",
            "~/.cursor/mcp.json, or .cursor/mcp.json in a project",
            {"url": url, "headers": headers},
        ),
        (
            # Claude Desktop's config file starts local servers only: the
            # mcp-remote bridge (Node.js) carries the URL and the header. The
            # header goes through an environment variable: an argument with
            # a space in it is split on some platforms.
            "claude-desktop",
            "Claude Desktop",
            "claude_desktop_config.json (through the mcp-remote bridge: needs Node.js)",
            {
                "command": "npx",
                "args": ["-y", "mcp-remote", url, "--header", "Authorization:${CHATMEM_AUTH}"],
                "env": {"CHATMEM_AUTH": authorization},
            },
        ),
    ]
    return [
        ClientConfig(key, client, where, json.dumps({"mcpServers": {"chatmem": server}}, indent=2))
        for key, client, where, server in configs
    ]
