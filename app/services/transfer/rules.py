"""What an imported row must satisfy: the rules of the door that writes such a row.

An export file is input like a request body, and an edited or forged one must not store
what /commit would refuse (a 50 MB note, a 500-character speaker, a number where text
goes). Each row is checked, before anything is written, with the fields of the model the
API, MCP and the CLI take for it, by column (not copies: the ``FieldInfo`` of
``NoteIn``, ``TurnIn``, ``ConversationIn``, ``ExtractedFact``, ``ObservationIn``,
``EntityIn``, ``RelationIn``), and notes and turns with the commit's length limit
(``commit.max_text_chars``, ``app.services.memory.commit.check_length``); a window is at
most its turns as ``render_turn`` writes them. Every text anywhere in a row follows the
shared text rule (no NUL, no lone surrogate). Columns no door takes (counters, ids,
timestamps the database sets) are left to the database's types and constraints.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, cast

from annotated_types import Le
from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from pydantic.fields import FieldInfo

from app.errors import InvalidInput
from app.protocol import JSONObject
from app.services.common.inputs import text_problem
from app.services.facts.model import ExtractedFact
from app.services.graph.models import EntityIn, ObservationIn, RelationIn
from app.services.memory.commit import check_length
from app.services.memory.schemas import ConversationIn, NoteIn, TurnIn
from app.services.memory.windows import WindowTurn, render_turn
from app.services.runtime import Elephant
from app.services.transfer import fileformat

_NOTE = NoteIn.model_fields
_TURN = TurnIn.model_fields
_CONVERSATION = ConversationIn.model_fields
_FACT = ExtractedFact.model_fields


def _row_model(name: str, columns: Mapping[str, FieldInfo]) -> type[BaseModel]:
    """A model of a row's columns, each with the door's field (type, limits, validators);
    other columns are ignored here."""
    fields: dict[str, Any] = {
        column: (field.annotation, field) for column, field in columns.items()
    }
    config = ConfigDict(extra="ignore", str_strip_whitespace=True)
    return create_model(name, __config__=config, **fields)


# section (and kind) -> the row's columns as the door that writes them takes them
_MEMORY = {
    "text": _NOTE["text"],
    "source": _NOTE["source"],
    "importance": _NOTE["importance"],
    "event_at": _NOTE["occurred_at"],
}
NOTE_ROW = _row_model("NoteRow", {**_MEMORY, "metadata": _NOTE["metadata"]})
WINDOW_ROW = _row_model("WindowRow", _MEMORY)
ROWS: dict[str, type[BaseModel]] = {
    "conversations": _row_model(
        "ConversationRow",
        {
            "external_id": _CONVERSATION["conversation_id"],
            "source": _CONVERSATION["source"],
            "session_date": _CONVERSATION["session_date"],
            "metadata": _CONVERSATION["metadata"],
        },
    ),
    "turns": _row_model(
        "TurnRow",
        {
            "speaker": _TURN["speaker"],
            "text": _TURN["text"],
            "occurred_at": _TURN["timestamp"],
            "source_turn_id": _TURN["id"],
        },
    ),
    fileformat.GRAPH_ENTITIES: _row_model("EntityRow", {"name": EntityIn.model_fields["name"]}),
    fileformat.GRAPH_RELATIONS: _row_model(
        "RelationRow",
        {"source": RelationIn.model_fields["source"], "target": RelationIn.model_fields["target"]},
    ),
}
EXTRACTED_FACT_ROW = _row_model(
    "FactRow",
    {"text": _FACT["text"], "subject": _FACT["subject"], "confidence": _FACT["confidence"]},
)
OBSERVATION_ROW = _row_model(
    "ObservationRow",
    {"text": ObservationIn.model_fields["content"], "subject": EntityIn.model_fields["name"]},
)


def _window_size_limit() -> int:
    """The most turns a window holds: ConversationIn's bound on window_size."""
    bound = next(m.le for m in _CONVERSATION["window_size"].metadata if isinstance(m, Le))
    return int(cast(int, bound))


MAX_WINDOW_TURNS = _window_size_limit()
# What render_turn adds to a turn's text at most: the longest date, the longest speaker
# (a Name), and the newline between turns.
TURN_FRAME = len(render_turn(WindowTurn(0, "x" * 200, "", datetime(2000, 9, 30), None))) + 1


class RowRules:
    """Checks one row of a section (``fileformat.scan`` calls it for every row line); raises
    InvalidInput saying what to fix, which scan prefixes with the line."""

    def __init__(self, elephant: Elephant) -> None:
        self.elephant = elephant
        self.max_text_chars = elephant.settings.commit.max_text_chars

    def __call__(self, section: str, row: JSONObject) -> None:
        _storable(row)
        model = self._model(section, row)
        if model is not None:
            try:
                model.model_validate({k: v for k, v in row.items() if k in model.model_fields})
            except ValidationError as exc:
                raise InvalidInput.from_validation(exc) from None
        text = row.get("text")
        if not isinstance(text, str):
            return
        if section == "turns" or (section == "memories" and row.get("kind") == "note"):
            check_length(self.elephant, text, "text")
        elif section == "memories":
            self._window_length(text, row)

    def _model(self, section: str, row: JSONObject) -> type[BaseModel] | None:
        if section == "memories":
            return NOTE_ROW if row.get("kind") == "note" else WINDOW_ROW
        if section == "facts":
            return EXTRACTED_FACT_ROW if row.get("observation_kind") is None else OBSERVATION_ROW
        return ROWS.get(section)

    def _window_length(self, text: str, row: JSONObject) -> None:
        """A window is its turns (each within the limit) as render_turn writes them."""
        start, end = row.get("turn_start"), row.get("turn_end")
        spans = end - start + 1 if isinstance(start, int) and isinstance(end, int) else 1
        turns = min(max(spans, 1), MAX_WINDOW_TURNS)
        limit = turns * (self.max_text_chars + TURN_FRAME)
        if len(text) > limit:
            raise InvalidInput(
                f"text is {len(text)} characters, more than a window of {turns} turns holds "
                f"({limit}: each turn at most {self.max_text_chars}, commit.max_text_chars)"
            )


def _storable(row: JSONObject) -> None:
    """Every text in the row, keys and nested values included, is text Postgres can store."""
    stack: list[tuple[str, Any]] = list(row.items())
    while stack:
        where, value = stack.pop()
        if isinstance(value, str):
            problem = text_problem(value)
            if problem is not None:
                raise InvalidInput(f"{where} {problem}")
        elif isinstance(value, dict):
            for key, item in value.items():
                stack.append((f"{where} key {str(key)[:40]!r}", str(key)))
                stack.append((f"{where}.{str(key)[:40]}", item))
        elif isinstance(value, list):
            stack.extend((f"{where}[{i}]", item) for i, item in enumerate(value))
