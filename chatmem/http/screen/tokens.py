"""Every user's API tokens on the Memory screen's Tokens tab: revoke one (making
them is the Connect page's).
"""

from __future__ import annotations

from typing import Any

from flask import jsonify, request
from flask.typing import ResponseReturnValue

from ...auth import tokens
from ...core import current_memory
from ...errors import ChatmemError
from ...memory.models import ApiToken
from .access import admin_only, flash_back, wants_json
from .blueprint import ID_MAX, actor_id, bp
from .forms import failed, utc_json
from .view import helpers, visible


@bp.post(f"/tokens/<int(max={ID_MAX}):token_id>/revoke")
@admin_only(changes_state=True)
def revoke_token(token_id: int) -> ResponseReturnValue:
    """Revoke anyone's API token (audited as this curator's `token_revoke`)."""
    try:
        token = tokens.revoke(current_memory().db.session(), token_id, actor_id=actor_id())
    except ChatmemError as error:
        return failed(error, "tokens")
    owner = helpers()["user_name"](token.user_id)
    message = visible(
        f"Revoked {owner}’s token “{token.name}” ({token.prefix}…): it no longer works."
    )
    if wants_json():
        return jsonify({"ok": True, "token": token_json(token), "message": message})
    return flash_back(message, "ok", "tokens", request.form.get("page"))


def token_json(token: ApiToken) -> dict[str, Any]:
    """A token as the screen describes it: never its hash, only the prefix."""

    return {
        "id": token.id,
        "user_id": token.user_id,
        "name": token.name,
        "prefix": token.prefix,
        "read_only": token.read_only,
        "created_at": utc_json(token.created_at),
        "last_used_at": utc_json(token.last_used_at),
        "expires_at": utc_json(token.expires_at),
        "revoked_at": utc_json(token.revoked_at),
        "state": tokens.state_of(token),
    }
