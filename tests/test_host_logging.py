"""chatmem's log records reach the handlers a host puts on `app.logger`."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from flask import Flask

from chatmem.errors import ChatmemError


class Kept(logging.Handler):
    """A handler as a host adds one (a file, an e-mail to the admins): keeps what it gets."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def host_handler(app: Flask) -> Any:
    handler = Kept()
    app.logger.addHandler(handler)
    yield handler
    app.logger.removeHandler(handler)


def test_a_handler_on_app_logger_sees_a_tools_error(
    memory: Any, editor: Any, host_handler: Kept, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(ChatmemError) as refused:
        memory.call_tool("explode", {}, user=editor)
    assert refused.value.code == "tool_error"

    (record,) = host_handler.records
    assert record.getMessage() == "tool explode failed" and record.name == "chatmem"
    assert "secret internal detail" in str(record.exc_info[1])
    # ...and the root's handlers (here pytest's) see it once, as before.
    assert [r.getMessage() for r in caplog.records].count("tool explode failed") == 1


def test_the_host_levels_are_kept(memory: Any, editor: Any, host_handler: Kept) -> None:
    host_handler.setLevel(logging.CRITICAL)
    with pytest.raises(ChatmemError):
        memory.call_tool("explode", {}, user=editor)
    assert host_handler.records == []
