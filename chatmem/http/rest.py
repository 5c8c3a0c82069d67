"""REST tool routes: `GET /api/tools`, `POST /api/tools/<name>`, `GET /api/openapi.json`.

A thin translation to the one dispatch path: the JSON body is the tool's
arguments, a `ChatmemError` becomes its status and `{"error": {...}}`.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify, request
from werkzeug.exceptions import HTTPException, MethodNotAllowed

from .. import inputs
from ..auth.token_check import Bearer
from ..core import current_memory
from ..errors import ChatmemError, InvalidParams
from ..tools import Tool
from .bearer import bearer, exempt_from_csrf, read_body, session_key
from .errors import http_error, method_not_allowed, server_failure
from .openapi import openapi_document

api = Blueprint("chatmem_api", __name__)
api.record_once(lambda state: exempt_from_csrf(state.app, api))


@api.errorhandler(ChatmemError)
def _chatmem_error(error: ChatmemError) -> Response:
    return http_error(error)


@api.errorhandler(HTTPException)
def _http_error(error: HTTPException) -> Response:
    if isinstance(error, MethodNotAllowed):
        return http_error(method_not_allowed(sorted(error.valid_methods or ())))
    code = {404: "not_found", 413: "payload_too_large"}.get(error.code or 400, "invalid_params")
    return http_error(ChatmemError(error.description or "", code=code, status=error.code))


@api.errorhandler(Exception)
def _unexpected(error: Exception) -> Response:
    return http_error(server_failure(error, "chatmem REST route"))


def visible_tools(who: Bearer) -> list[Tool]:
    """The tools this token may call right now (its user's, narrowed by its scope)."""
    return list(current_memory().visible_tools(who.user, read_only=who.read_only))


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
    server_name = current_memory().server_name
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
    mem = current_memory()
    return jsonify(
        mem.call_tool(
            name,
            arguments,
            user=who.user,
            session_key=session_key(),
            channel="rest",
            read_only=who.read_only,
        )
    )


@api.get("/openapi.json")
def openapi() -> Response:
    who = bearer()
    mem = current_memory()
    prefix = request.path.rsplit("/api/openapi.json", 1)[0]
    return jsonify(openapi_document(visible_tools(who), prefix=prefix, server_name=mem.server_name))
