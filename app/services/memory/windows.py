"""Conversation windows: overlapping runs of turns, the verbatim retrieval units."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class WindowTurn:
    seq: int
    speaker: str
    text: str
    when: datetime | None
    source_turn_id: str | None


@dataclass(frozen=True)
class Window:
    turn_start: int  # seq of the first turn
    turn_end: int  # seq of the last turn (inclusive)
    text: str
    source_turn_ids: list[str]
    event_at: datetime | None


def render_turn(turn: WindowTurn) -> str:
    """'[8 May 2023] Caroline: text': the date in words matches how people ask."""
    if turn.when is None:
        return f"{turn.speaker}: {turn.text}"
    return f"[{turn.when.day} {turn.when:%B %Y}] {turn.speaker}: {turn.text}"


def window_starts(count: int, size: int, stride: int) -> list[int]:
    """Start offsets so that every turn is covered and the tail is never dropped."""
    if count <= 0:
        return []
    if count <= size:
        return [0]
    starts = list(range(0, count - size + 1, stride))
    if starts[-1] + size < count:
        starts.append(count - size)  # a last full window ending on the final turn
    return starts


def build_windows(turns: Sequence[WindowTurn], size: int, stride: int) -> list[Window]:
    if not 1 <= stride <= size:
        raise ValueError(f"stride must be between 1 and window_size ({size}), got {stride}")
    windows = []
    for start in window_starts(len(turns), size, stride):
        chunk = turns[start : start + size]
        dates = [turn.when for turn in chunk if turn.when is not None]
        windows.append(
            Window(
                turn_start=chunk[0].seq,
                turn_end=chunk[-1].seq,
                text="\n".join(render_turn(turn) for turn in chunk),
                source_turn_ids=[t.source_turn_id for t in chunk if t.source_turn_id],
                event_at=min(dates) if dates else None,
            )
        )
    return windows
