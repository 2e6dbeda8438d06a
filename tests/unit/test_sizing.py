"""The embedded server's memory settings follow the machine, within bounds, and a value
set in the settings wins."""

from __future__ import annotations

from pathlib import Path

from app.config import Settings
from app.db import Database
from app.db.sizing import MB, choose, machine_memory_bytes

GB = 1024 * MB


def test_a_share_of_memory_within_bounds() -> None:
    laptop = choose(16 * GB)
    assert (laptop.shared_buffers_mb, laptop.effective_cache_size_mb) == (4096, 8192)
    assert laptop.maintenance_work_mem_mb == 1024
    small = choose(1 * GB)
    assert (small.shared_buffers_mb, small.maintenance_work_mem_mb) == (256, 64)
    tiny = choose(256 * MB)
    assert tiny.shared_buffers_mb == 128  # never below PostgreSQL's own default
    assert tiny.effective_cache_size_mb >= tiny.shared_buffers_mb
    big = choose(512 * GB, share=0.5)
    assert big.shared_buffers_mb == 4096  # capped


def test_a_value_set_wins() -> None:
    chosen = choose(16 * GB, shared_buffers_mb=300, maintenance_work_mem_mb=70)
    assert chosen.shared_buffers_mb == 300 and chosen.maintenance_work_mem_mb == 70
    assert chosen.settings()["shared_buffers"] == "'300MB'"


def test_machine_memory_is_read() -> None:
    assert machine_memory_bytes() > 256 * MB


def test_the_embedded_server_runs_with_the_chosen_sizes(tmp_path: Path) -> None:
    settings = Settings.model_validate(
        {"data_dir": str(tmp_path), "embedded": {"shared_buffers_mb": 192}}
    )
    db = Database(settings)
    db.open()
    try:
        with db.admin_connection() as conn:
            shown = {
                name: conn.execute(
                    "SELECT pg_size_bytes(current_setting(%s)) / 1048576", (name,)
                ).fetchone()
                for name in ("shared_buffers", "effective_cache_size", "maintenance_work_mem")
            }
    finally:
        db.close()
    expected = choose(machine_memory_bytes(), shared_buffers_mb=192)
    assert shown["shared_buffers"] == (192,)
    assert shown["maintenance_work_mem"] == (expected.maintenance_work_mem_mb,)
    assert shown["effective_cache_size"] == (expected.effective_cache_size_mb,)
