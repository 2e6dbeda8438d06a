"""One logging set-up for every process: the app, uvicorn and fastmcp/mcp write the same
lines to stderr (text, or one JSON object per line), each carrying the fields bound to
the request it belongs to (its request id; for MCP, the method and tool).

Fields are bound with :func:`bound` (a contextvar, so they follow the request into its
worker thread and out to the access line, which is written from the request's task).
An exception that declares itself expected (a ``log_level`` below WARNING, as the MCP
errors we raise for a caller's mistake do) is logged as one line with its error code,
without its traceback or its text (which may quote what the caller sent).

Access lines are the app's own (``app.access``, app/web/access_log.py: the route
template, never the path as sent); uvicorn's, which carry the path and its query string
(a search text, a name), are dropped here wherever uvicorn still writes them.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from app.config import Settings

_FIELDS: ContextVar[Mapping[str, str]] = ContextVar(
    "elephant_log_fields", default=MappingProxyType({})
)
# Start-up chatter (adopting the embedded server, alembic's banner, HTTP client lines)
# shown only with -v.
CHATTY_LOGGERS = ("alembic", "app.db.embedded", "app.db.migrate", "httpx", "httpcore")
# Loggers that other libraries configure themselves: ours write through the root handler.
UVICORN_ACCESS = "uvicorn.access"
LIBRARY_LOGGERS = ("uvicorn", "uvicorn.error", UVICORN_ACCESS, "fastmcp", "mcp")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s%(fields)s: %(message)s"


def current_fields() -> Mapping[str, str]:
    """The fields bound to the code running now (empty outside a request)."""
    return _FIELDS.get()


@contextmanager
def bound(**fields: str | None) -> Iterator[None]:
    """Add ``fields`` to every line logged inside the block (None values are skipped)."""
    merged = {**_FIELDS.get(), **{k: v for k, v in fields.items() if v is not None}}
    token = _FIELDS.set(merged)
    try:
        yield
    finally:
        _FIELDS.reset(token)


def bind(**fields: str) -> None:
    """Add ``fields`` for the rest of the current task (for code that has no block to wrap,
    such as the last hook a response passes: the task ends with the request)."""
    _FIELDS.set({**_FIELDS.get(), **fields})


class FieldsFilter(logging.Filter):
    """Puts the bound fields on each record (``record.fields``: the text form)."""

    def filter(self, record: logging.LogRecord) -> bool:
        fields = _FIELDS.get()
        record.bound = dict(fields)
        record.fields = (
            " [" + " ".join(f"{key}={value}" for key, value in fields.items()) + "]"
            if fields
            else ""
        )
        return True


class ExpectedErrorsFilter(logging.Filter):
    """A caller's mistake logged with its exception (fastmcp logs resource errors with
    ``exc_info``) becomes one line: the message and the error's code (``not_found``), no
    traceback. Not the error's text: the caller has it, and it may quote what they sent
    (a name, a date), which must not outlive an erasure in a log file."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        level = getattr(exc, "log_level", None)
        if exc is not None and isinstance(level, int) and level < logging.WARNING:
            record.msg = f"{record.getMessage()}: {_error_code(exc)}"
            record.args = None
            record.exc_info = None
            record.exc_text = None
        return True


def _error_code(exc: BaseException) -> str:
    """The code of our error behind ``exc`` (an MCP error raised from an ElephantError),
    else the exception's type."""
    for error in (exc, exc.__cause__):
        code = getattr(error, "code", None)
        if isinstance(code, str):
            return code
    return type(exc).__name__


class RawAccessFilter(logging.Filter):
    """Drops uvicorn's access line: it carries the path as sent, query string included.
    The app writes its own, by route template (app/web/access_log.py)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.name != UVICORN_ACCESS


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        return _timestamp(record)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, message, the bound fields, exc."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": _timestamp(record),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        entry.update(getattr(record, "bound", {}))
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exc"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def _timestamp(record: logging.LogRecord) -> str:
    return datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")


class _ElephantHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Marks the handler this module installed, so a second set-up replaces it."""


def configure_logging(
    settings: Settings, verbose: bool = False, *, stream: TextIO | None = None
) -> None:
    """Route every logger through one handler on ``stream`` (stderr) in log.format, at
    log.level; ``verbose`` also shows the start-up chatter. Safe to call again."""
    handler = _ElephantHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if settings.log.format == "json" else TextFormatter())
    handler.addFilter(FieldsFilter())
    handler.addFilter(ExpectedErrorsFilter())
    handler.addFilter(RawAccessFilter())
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _ElephantHandler)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(settings.log.level)
    _adopt_library_loggers()
    for name in CHATTY_LOGGERS:
        logging.getLogger(name).setLevel(logging.NOTSET if verbose else logging.WARNING)


def _adopt_library_loggers() -> None:
    """uvicorn and fastmcp install their own handlers and formats: take them back to ours.
    fastmcp does so when first imported, so it is told not to (and reset if already in)."""
    os.environ["FASTMCP_LOG_ENABLED"] = "false"
    fastmcp = sys.modules.get("fastmcp")
    if fastmcp is not None:
        fastmcp.settings.log_enabled = False
    for name in LIBRARY_LOGGERS:
        logger = logging.getLogger(name)
        for old in list(logger.handlers):
            logger.removeHandler(old)
        logger.propagate = True
