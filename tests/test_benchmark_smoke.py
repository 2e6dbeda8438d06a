"""Benchmarks run in smoke mode (tiny sizes, seconds), so they cannot rot unnoticed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]


def test_auth_benchmark_smoke(tmp_path: Path) -> None:
    out = tmp_path / "auth.json"
    result = subprocess.run(
        [sys.executable, "benchmarks/auth.py", "--smoke", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["requests"] == 20
    for part in ("key_lookup", "keys", "local"):
        assert report[part]["p50_ms"] > 0
    assert "access control adds" in result.stdout
