"""`elephant ingest` and `elephant worker` as a user runs them (subprocesses, real server)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.config import Settings
from app.db import Database
from app.errors import InvalidInput
from app.services.memory.ingest import read_items
from tests.conftest import count_rows

ELEPHANT = str(Path(sys.executable).parent / "elephant")

LOCOMO_LIKE = [
    {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Nora",
            "speaker_b": "Omar",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {
                    "speaker": "Nora",
                    "dia_id": "D1:1",
                    "text": "I adopted a cat named Pixel last week.",
                },
                {
                    "speaker": "Omar",
                    "dia_id": "D1:2",
                    "text": "Nice! I started a job at Spotify in Stockholm.",
                    "img_url": ["x"],
                    "blip_caption": "a photo of an office",
                },
            ],
            "session_2_date_time": "7:55 pm on 9 June, 2023",
            "session_2": [
                {
                    "speaker": "Nora",
                    "dia_id": "D2:1",
                    "text": "Pixel turned one year old yesterday.",
                },
            ],
        },
        "qa": [],
    }
]


def run(args: list[str], settings: Settings) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "ELEPHANT_DATA_DIR": str(settings.data_dir),
        "ELEPHANT_EMBEDDED_DATABASE": settings.embedded.database,
    }
    return subprocess.run([ELEPHANT, *args], env=env, capture_output=True, text=True, timeout=300)


def test_ingest_locomo_file_into_a_tenant_per_sample(
    tmp_path: Path, settings: Settings, db: Database
) -> None:
    path = tmp_path / "mini_locomo.json"
    path.write_text(json.dumps(LOCOMO_LIKE))
    result = run(["ingest", str(path), "--tenant", "lc", "--split-tenants"], settings)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["conversations"] == 2 and report["turns"] == 3
    assert report["tenants"] == ["lc-conv-x"]
    assert report["jobs_run"] == 2
    with db.tenant("lc-conv-x") as conn:
        turns = conn.execute("SELECT source_turn_id, text FROM turns ORDER BY id").fetchall()
        sessions = conn.execute(
            "SELECT external_id, session_date::date::text FROM conversations ORDER BY external_id"
        ).fetchall()
        facts = conn.execute("SELECT text, valid_from::date::text FROM facts").fetchall()
    assert [t[0] for t in turns] == ["D1:1", "D1:2", "D2:1"]
    assert "[shares a photo: a photo of an office]" in turns[1][1]
    assert sessions == [("conv-x:session_1", "2023-05-08"), ("conv-x:session_2", "2023-06-09")]
    assert any("Pixel" in text for text, _ in facts)
    assert count_rows(db, "lc", "memories") == 0  # nothing leaked into the base tenant


def test_ingest_jsonl_then_worker_once(tmp_path: Path, settings: Settings, db: Database) -> None:
    path = tmp_path / "notes.jsonl"
    lines = [
        {"text": "Paula's wedding is on 12 August 2026 in Porto", "source": "import"},
        {"text": "lol"},
        {"tenant": "jl-other", "text": "Quentin keeps his spare keys with Rita next door"},
        {
            "turns": [{"speaker": "Sam", "text": "I run the Berlin marathon every September."}],
            "conversation_id": "s1",
        },
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    result = run(["ingest", str(path), "--tenant", "jl", "--no-extract"], settings)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["notes"], report["conversations"], report["rejected"]) == (3, 1, 1)
    assert report["jobs_run"] == 0
    assert count_rows(db, "jl", "facts") == 0
    worker = run(["worker", "--once"], settings)
    assert worker.returncode == 0, worker.stderr
    assert count_rows(db, "jl", "facts") >= 2
    assert count_rows(db, "jl-other", "facts") >= 1


def test_a_bad_line_stops_before_anything_is_written(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"text": "a fine note about Lyon in 2020"}\n{"text": ""}\n')
    with pytest.raises(InvalidInput, match=r"bad.jsonl:2"):
        read_items(path, "x")
