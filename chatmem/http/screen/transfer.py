"""The Memory screen's export (a memory-export.v1 download) and import (an upload,
all or nothing), and the upload's size limit.
"""

from __future__ import annotations

import io
import json
from typing import Any

from flask import jsonify, request
from flask.typing import ResponseReturnValue
from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.wrappers import Response

from ... import inputs
from ...core import current_memory
from ...errors import ChatmemError, InvalidParams, PayloadTooLarge
from ...memory import transfer
from ...memory.models import STATUSES, utcnow
from .access import admin_only, error_response, flash_back, wants_json
from .blueprint import actor_id, bp
from .forms import failed
from .view import helpers


@bp.get("/export")
@admin_only(changes_state=False)
def export() -> ResponseReturnValue:
    """The guidance (`?status=` repeated to narrow it) as a memory-export.v1 JSON download."""
    wanted = [s for s in request.args.getlist("status") if s] or list(STATUSES)
    if not set(wanted) <= set(STATUSES):
        return error_response(
            InvalidParams(
                f"status must be one of {', '.join(STATUSES)}.", details={"field": "status"}
            )
        )
    mem = current_memory()
    document = transfer.export_document(
        mem.db.session(), wanted, server_name=mem.server_name, name_of=helpers()["user_name"]
    )
    body = json.dumps(document, ensure_ascii=False, indent=2)
    name = f"chatmem-memory-{utcnow():%Y-%m-%d}.json"
    return Response(
        body,
        mimetype="application/json",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )


@bp.post("/import")
@admin_only(changes_state=True)
def import_memory() -> ResponseReturnValue:
    """An uploaded export: all or nothing, pending unless "keep their status" is ticked."""
    upload = request.files.get("file")
    try:
        if upload is None or not upload.filename:
            raise InvalidParams("Choose a file to import.", details={"field": "file"})
        try:
            raw = upload.read()
        finally:
            upload.close()  # a large upload is spooled to a temporary file: free it now
        mem = current_memory()
        snapshot = mem.snapshot()
        result = transfer.import_document(
            mem.db.session(),
            transfer.parse(raw, max_bytes=transfer.UPLOAD_MAX_BYTES),
            actor_id=actor_id(),
            keep_status=inputs.form_boolean(request.form, "keep_status"),
            screen=lambda fields: mem.screen(dict(fields), snapshot=snapshot),
        )
    except ChatmemError as error:
        return failed(error, "pending")
    message = transfer.summary(result)
    if wants_json():
        return jsonify(
            {
                "ok": True,
                "imported": result.imported,
                "skipped": result.skipped,
                "flagged": result.flagged,
                "altered": result.altered,
                "message": message,
            }
        )
    return flash_back(message, "ok", "active" if result.status != "pending" else "pending")


@bp.before_request
def _upload_limit() -> ResponseReturnValue | None:
    """The Import form's file is read only up to transfer.UPLOAD_MAX_BYTES."""
    if request.endpoint != "chatmem_memory.import_memory":
        return None
    request.max_content_length = transfer.UPLOAD_MAX_BYTES
    if (request.content_length or 0) > transfer.UPLOAD_MAX_BYTES:
        return _too_large()
    if request.content_length is None and request.environ.get("wsgi.input_terminated"):
        # Sent without a length (chunked): read it whole within the limit first
        # (413 past it), so the form parser never leaves half a file spooled.
        body = _bounded_body(request.environ["wsgi.input"], transfer.UPLOAD_MAX_BYTES)
        if body is None:
            return _too_large()
        request.environ["wsgi.input"] = io.BytesIO(body)
    return None


def _bounded_body(stream: Any, limit: int) -> bytes | None:
    """The whole of a stream the server ends at the body's end, or None past `limit`."""
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        chunk = stream.read(min(64 * 1024, limit + 1 - size))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
    return None


@bp.errorhandler(RequestEntityTooLarge)
def _too_large(_error: Exception | None = None) -> ResponseReturnValue:
    """Also when the upload came without a length (chunked): found while reading it."""
    if request.endpoint != "chatmem_memory.import_memory":
        return error_response(PayloadTooLarge("The request is too large."))
    limit = transfer.UPLOAD_MAX_BYTES // (1024 * 1024)
    return error_response(PayloadTooLarge(f"The file is larger than {limit} MB."))
