"""`flask chatmem token ...`: create (shown once), list (never the token), revoke."""

from __future__ import annotations

from typing import Any

from flask import Flask

TOOLS = "/chatmem/api/tools"


def cli(app: Flask, *args: str) -> Any:
    return app.test_cli_runner().invoke(args=["chatmem", "token", *args])


def test_create_prints_a_working_token_once(app: Flask) -> None:
    created = cli(app, "create", "editor", "--name", "laptop")
    assert created.exit_code == 0, created.output
    token = created.stdout.strip()
    assert token.startswith("cm_") and "\n" not in token
    assert "cannot be shown again" in created.stderr
    client = app.test_client()
    response = client.post(f"{TOOLS}/recall", json={}, headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200

    listed = cli(app, "list")
    assert listed.exit_code == 0
    assert token not in listed.output
    assert "#1  editor  laptop  " + token[:10] in listed.output
    assert "last used 20" in listed.output and "active" in listed.output


def test_list_filters_by_user_and_revoke_stops_a_token_at_once(
    app: Flask, second_worker: Flask
) -> None:
    editor_token = cli(app, "create", "editor").stdout.strip()
    cli(app, "create", "admin", "--name", "ci")
    only_admin = cli(app, "list", "admin").output
    assert "admin  ci" in only_admin and "editor" not in only_admin
    headers = {"Authorization": f"Bearer {editor_token}"}
    other = second_worker.test_client()
    assert other.get(TOOLS, headers=headers).status_code == 200

    revoked = cli(app, "revoke", "1")
    assert revoked.exit_code == 0 and "Revoked token #1." in revoked.output
    assert other.get(TOOLS, headers=headers).status_code == 401  # on every worker
    assert "revoked 20" in cli(app, "list", "editor").output


def test_unknown_users_and_tokens_are_clear_errors(app: Flask) -> None:
    missing_user = cli(app, "create", "nobody")
    assert missing_user.exit_code == 1
    assert "No user named 'nobody'." in missing_user.output
    assert cli(app, "list", "nobody").exit_code == 1
    missing_token = cli(app, "revoke", "99")
    assert missing_token.exit_code == 1
    assert "No token #99." in missing_token.output
    assert cli(app, "list").output.strip() == "No tokens."


def test_the_cli_and_the_browser_share_the_rules(app: Flask) -> None:
    """A name with hidden characters and an expiry past ten years: clear errors, no token."""
    hidden = cli(app, "create", "editor", "--name", "lap\u200btop")
    assert hidden.exit_code == 1
    assert "name holds invisible or control characters: U+200B" in hidden.output
    assert "Traceback" not in hidden.output
    too_far = cli(app, "create", "editor", "--expires-days", "3651")
    assert too_far.exit_code == 2
    assert "3651 is not in the range 1<=x<=3650" in too_far.output
    assert cli(app, "list").output.strip() == "No tokens."
