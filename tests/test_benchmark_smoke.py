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


def test_dedup_benchmark_smoke(tmp_path: Path) -> None:
    out = tmp_path / "dedup.json"
    result = subprocess.run(
        [sys.executable, "benchmarks/dedup.py", "--smoke", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["pairs"] == sum(row["pairs"] for row in report["categories"].values())
    assert report["should_merge"] > 0 and report["should_keep"] > 0
    for rule in ("old_rule", "new_rule"):
        assert 0 <= report[rule]["precision"] <= 1 and 0 <= report[rule]["recall"] <= 1
    assert report["new_rule"]["wrong_merges"] <= report["old_rule"]["wrong_merges"]
    assert "misclassified by the new rule" in result.stdout


def test_load_benchmark_smoke(tmp_path: Path) -> None:
    out = tmp_path / "load.json"
    result = subprocess.run(
        [sys.executable, "benchmarks/load.py", "--smoke", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["acknowledged"] == report["acknowledged_present"] > 0
    assert report["search"]["n"] > 0 and report["errors"] == {}


def test_fuzz_benchmark_smoke(tmp_path: Path) -> None:
    out = tmp_path / "fuzz.json"
    result = subprocess.run(
        [sys.executable, "benchmarks/fuzz.py", "--smoke", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    report = json.loads(out.read_text())
    totals = report["totals"]
    assert totals["requests"] >= 40 and totals["5xx"] == 0 and totals["failures"] == 0
    assert "POST /commit" in report["operations"] and "GET /search" in report["operations"]
    assert "requests/s" in result.stdout
