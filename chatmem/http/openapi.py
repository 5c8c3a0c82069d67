"""The OpenAPI 3.1 document for the REST routes, generated from the tools' schemas.

OpenAPI 3.1 schemas are JSON Schema 2020-12, the dialect the tools are
written in, so each tool's input and output schemas go in unchanged.
"""

from __future__ import annotations

from typing import Any

from ..tools import Tool

_ERROR_STATUSES = {
    "400": "Invalid arguments (`invalid_params`, with `field`).",
    "401": "Missing, unknown, revoked or expired API token, or one made for another user "
    "(`unauthorized`).",
    "403": "`forbidden`, `memory_disabled`, `blocked_by_memory` or `approval_required`.",
    "404": "Unknown tool or session (`not_found`).",
    "409": "A stale edit (`conflict`).",
    "413": "The body is over the size cap (`payload_too_large`).",
    "429": "Too many calls with this token (`rate_limited`); see `Retry-After`.",
    "503": "The database cannot be reached (`unavailable`); nothing was done, see `Retry-After`.",
}

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
            },
            "required": ["code", "message"],
            "additionalProperties": True,
        }
    },
    "required": ["error"],
}

TOOL_SUMMARY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "full_name": {"type": "string"},
        "title": {"type": ["string", "null"]},
        "description": {"type": "string"},
        "read_only": {"type": "boolean"},
        "input_schema": {"type": "object"},
        "output_schema": {"type": ["object", "null"]},
    },
    "required": ["name", "description", "read_only", "input_schema"],
}


def _errors() -> dict[str, Any]:
    return {
        status: {
            "description": text,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
        }
        for status, text in _ERROR_STATUSES.items()
    }


def _operation(tool: Tool, server_name: str) -> dict[str, Any]:
    output = tool.output_schema or {"type": "object"}
    return {
        "post": {
            "operationId": f"call_{tool.name.replace('-', '_')}",
            "summary": tool.title or tool.name,
            "description": tool.description,
            "tags": ["memory" if tool.memory else server_name],
            "parameters": [{"$ref": "#/components/parameters/Session"}],
            "requestBody": {
                "required": False,
                "content": {"application/json": {"schema": tool.input_schema}},
            },
            "responses": {
                "200": {
                    "description": "The tool's result.",
                    "content": {"application/json": {"schema": output}},
                },
                **_errors(),
            },
        }
    }


def openapi_document(tools: list[Tool], *, prefix: str, server_name: str) -> dict[str, Any]:
    paths: dict[str, Any] = {
        f"{prefix}/api/tools": {
            "get": {
                "operationId": "list_tools",
                "summary": "The tools this token's user may call",
                "responses": {
                    "200": {
                        "description": "Tools with their JSON Schemas.",
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "properties": {
                                        "tools": {
                                            "type": "array",
                                            "items": {"$ref": "#/components/schemas/ToolSummary"},
                                        }
                                    },
                                    "required": ["tools"],
                                }
                            }
                        },
                    },
                    "401": _errors()["401"],
                    "429": _errors()["429"],
                    "503": _errors()["503"],
                },
            }
        }
    }
    for tool in tools:
        paths[f"{prefix}/api/tools/{tool.name}"] = _operation(tool, server_name)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": f"{server_name} tools",
            "version": "1",
            "description": (
                "Every tool call runs through chatmem's one dispatch path: validation, "
                "capabilities, project-memory guardrails and the change ledger."
            ),
        },
        "servers": [{"url": "/"}],
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "A token from `flask chatmem token create <username>`.",
                }
            },
            "parameters": {
                "Session": {
                    "name": "X-Chatmem-Session",
                    "in": "header",
                    "required": False,
                    "description": "Groups calls into one session (any key you choose).",
                    "schema": {"type": "string", "minLength": 1, "maxLength": 200},
                }
            },
            "schemas": {"Error": ERROR_SCHEMA, "ToolSummary": TOOL_SUMMARY_SCHEMA},
        },
    }
