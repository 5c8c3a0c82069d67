"""REST tool routes: `GET /api/tools`, `POST /api/tools/<name>`, `GET /api/openapi.json`.

A thin translation to the one dispatch path: the JSON body is the tool's
arguments, a `ChatmemError` becomes its status and `{"error": {...}}`.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify, request
from werkzeug.exceptions import HTTPException, MethodNotAllowed

from .. import inputs
from ..errors import ChatmemError, InvalidParams
from ..extension import user_id_of
from ..memory import sessions
from ..memory.settings import Snapshot
from ..tokens import Bearer
from ..tools import Tool
from .bearer import bearer, exempt_from_csrf, memory, read_body, session_key
from .http_errors import add_error_headers, method_not_allowed, server_failure
from .openapi import openapi_document

api = Blueprint("chatmem_api", __name__)
api.record_once(lambda state: exempt_from_csrf(state.app, api))


def error_response(error: ChatmemError) -> Response:
    """The one way this API reports a failure (SPEC §11)."""
    response = jsonify({"error": error.to_dict()})
    response.status_code = error.status
    return add_error_headers(response, error)


@api.errorhandler(ChatmemError)
def _chatmem_error(error: ChatmemError) -> Response:
    return error_response(error)


@api.errorhandler(HTTPException)
def _http_error(error: HTTPException) -> Response:
    if isinstance(error, MethodNotAllowed):
        return error_response(method_not_allowed(sorted(error.valid_methods or ())))
    code = {404: "not_found", 413: "payload_too_large"}.get(error.code or 400, "invalid_params")
    return error_response(ChatmemError(error.description or "", code=code, status=error.code))


@api.errorhandler(Exception)
def _unexpected(error: Exception) -> Response:
    return error_response(server_failure(error, "chatmem REST route"))


def visible_tools(who: Bearer) -> list[Tool]:
    """The tools this token may call right now (its user's, narrowed by its scope)."""
    return list(memory().visible_tools(who.user, read_only=who.read_only, snapshot=who.snapshot))


def describe(tool: Tool, server_name: str) -> dict[str, Any]:
    return {
        "name": tool.name,
        "full_name": f"{server_name}/{tool.name}",
        "title": tool.title,
        "description": tool.description,
        "read_only": tool.read_only,
        "input_schema": tool.input_schema,
        "output_schema": tool.output_schema,
    }


@api.get("/tools")
def list_tools() -> Response:
    who = bearer()
    server_name = memory().server_name
    return jsonify({"tools": [describe(t, server_name) for t in visible_tools(who)]})


@api.post("/tools/<name>")
def call_tool(name: str) -> Response:
    who = bearer()
    body = read_body()
    # chatmem.inputs: bounded JSON and the value rules (NUL, NaN, 2^63...), 400 not 500.
    arguments = inputs.parse_json(body) if body.strip() else {}
    if not isinstance(arguments, dict):
        raise InvalidParams(
            "The request body must be a JSON object of the tool's arguments.",
            details={"field": "body"},
        )
    mem = memory()
    session_id = _session_for(who.user, session_key(), who.snapshot)
    return jsonify(
        mem.call_tool(
            name,
            arguments,
            user=who.user,
            session_id=session_id,
            channel="rest",
            snapshot=who.snapshot,
            read_only=who.read_only,
        )
    )


def _session_for(user: Any, key: str | None, snapshot: Snapshot | None) -> str | None:
    """The open REST session this client's key names, started on first use."""
    mem = memory()
    if key is None or not (snapshot or mem.snapshot()).memory_enabled:
        return None
    found = sessions.find_open(mem.db, user_id=user_id_of(user), channel="rest", external_key=key)
    if found is not None:
        return found.id
    return str(mem.start_session(user, "rest", external_key=key)) or None


@api.get("/openapi.json")
def openapi() -> Response:
    who = bearer()
    mem = memory()
    prefix = request.path.rsplit("/api/openapi.json", 1)[0]
    return jsonify(openapi_document(visible_tools(who), prefix=prefix, server_name=mem.server_name))
