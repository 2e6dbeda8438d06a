from __future__ import annotations

from datetime import UTC, datetime

import pytest

from app.services.gate.admit import novelty
from app.services.memory.windows import WindowTurn, build_windows, render_turn, window_starts


def turns(n: int) -> list[WindowTurn]:
    when = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    return [
        WindowTurn(i, "A" if i % 2 else "B", f"turn {i}", when, f"D1:{i + 1}") for i in range(n)
    ]


@pytest.mark.parametrize(
    ("count", "size", "stride"),
    [(1, 5, 2), (5, 5, 2), (6, 5, 2), (7, 5, 2), (8, 5, 2), (23, 5, 2), (10, 3, 3), (9, 4, 1)],
)
def test_every_turn_is_covered_and_the_tail_is_kept(count: int, size: int, stride: int) -> None:
    windows = build_windows(turns(count), size, stride)
    covered = {seq for w in windows for seq in range(w.turn_start, w.turn_end + 1)}
    assert covered == set(range(count))
    assert windows[-1].turn_end == count - 1
    assert all(w.turn_end - w.turn_start + 1 == min(size, count) for w in windows)


def test_starts_follow_the_stride() -> None:
    assert window_starts(9, 5, 2) == [0, 2, 4]
    assert window_starts(8, 5, 2) == [0, 2, 3]  # the last window is moved to end on turn 8
    assert window_starts(0, 5, 2) == []


def test_window_text_renders_date_and_speaker_and_keeps_source_ids() -> None:
    window = build_windows(turns(3), 5, 2)[0]
    assert window.text.splitlines()[0] == "[8 May 2023] B: turn 0"
    assert window.source_turn_ids == ["D1:1", "D1:2", "D1:3"]
    assert render_turn(WindowTurn(0, "Ann", "hi", None, None)) == "Ann: hi"


def test_stride_outside_one_to_window_size_is_refused() -> None:
    with pytest.raises(ValueError, match="stride"):
        build_windows(turns(4), 3, 0)
    with pytest.raises(ValueError, match="stride"):
        build_windows(turns(4), 3, 4)


def test_novelty_scale() -> None:
    assert novelty(None) == 10.0
    assert novelty(0.1) == 10.0
    assert novelty(1.0) == 0.0
    assert novelty(0.6) == pytest.approx(5.0)
