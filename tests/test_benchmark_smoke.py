"""Benchmarks run in smoke mode (tiny sizes, seconds), so they cannot rot unnoticed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[1]


def run_smoke(
    name: str, tmp_path: Path, timeout_s: int
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """Run benchmarks/<name>.py --smoke; its output and the JSON it wrote."""
    out = tmp_path / f"{name}.json"
    result = subprocess.run(
        [sys.executable, f"benchmarks/{name}.py", "--smoke", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return result, json.loads(out.read_text())


def test_auth_benchmark_smoke(tmp_path: Path) -> None:
    result, report = run_smoke("auth", tmp_path, timeout_s=240)
    assert report["requests"] == 20
    for part in ("key_lookup", "keys", "local"):
        assert report[part]["p50_ms"] > 0
    assert "access control adds" in result.stdout


def test_dedup_benchmark_smoke(tmp_path: Path) -> None:
    result, report = run_smoke("dedup", tmp_path, timeout_s=240)
    assert report["pairs"] == sum(row["pairs"] for row in report["categories"].values())
    assert report["should_merge"] > 0 and report["should_keep"] > 0
    for rule in ("old_rule", "new_rule"):
        assert 0 <= report[rule]["precision"] <= 1 and 0 <= report[rule]["recall"] <= 1
    assert report["new_rule"]["wrong_merges"] <= report["old_rule"]["wrong_merges"]
    assert "misclassified by the new rule" in result.stdout


def test_load_benchmark_smoke(tmp_path: Path) -> None:
    _, report = run_smoke("load", tmp_path, timeout_s=300)
    assert report["acknowledged"] == report["acknowledged_present"] > 0
    assert report["search"]["n"] > 0 and report["errors"] == {}


def test_scale_benchmark_smoke(tmp_path: Path) -> None:
    result, report = run_smoke("scale", tmp_path, timeout_s=300)
    assert report["smoke"] is True
    (size,) = report["results"]
    assert size["memories"] == 2000 and size["queries"] == 10
    assert size["one_statement"]["sql_ms"]["p50"] > 0
    assert size["separate_queries"]["sql_ms"]["p50"] > 0
    # The separate lanes run the statement's lanes and filters: (nearly) the same hits.
    assert size["top10_agreement"]["same_ids"] >= 0.9
    assert all(size["explain"]["lanes_used_index"].values()), size["explain"]["scans"]
    assert "lanes on their index (EXPLAIN)" in result.stdout


def test_fuzz_benchmark_smoke(tmp_path: Path) -> None:
    result, report = run_smoke("fuzz", tmp_path, timeout_s=300)
    totals = report["totals"]
    assert totals["requests"] >= 40 and totals["5xx"] == 0 and totals["failures"] == 0
    assert "POST /commit" in report["operations"] and "GET /search" in report["operations"]
    assert "requests/s" in result.stdout


def test_fact_quality_benchmark_smoke(tmp_path: Path) -> None:
    result, report = run_smoke("fact_quality", tmp_path, timeout_s=120)
    assert report["turns"] > 0 and report["gold"] > 0
    assert report["correct"] <= report["facts"]
    assert 0 <= report["precision"] <= 1 and 0 <= report["recall"] <= 1
    assert "precision" in result.stdout
