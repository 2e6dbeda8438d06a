"""benchmarks/graph.py in smoke mode (tiny sizes), so it cannot rot unnoticed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]


def test_graph_benchmark_smoke(tmp_path: Path) -> None:
    out = tmp_path / "graph.json"
    done = subprocess.run(
        [sys.executable, "benchmarks/graph.py", "--smoke", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["smoke"] is True and report["sizes"]["entities"] == 200
    # Both backends, AGE unless the benchmark's server lacks it (then said so).
    assert "relational" in report["backends"]
    assert set(report["backends"]) | set(report["skipped"]) == {"age", "relational"}
    for backend, result in report["backends"].items():
        record = result["record"]["with_observations"]
        assert record["observations"] == 60 and record["store_items_per_s"] > 0, backend
        assert result["build"]["relations"] == 600 and result["build"]["relations_per_s"] > 0
        for name, measure in result["two_hop"].items():
            assert measure["count"] == 10 and measure["p50"] > 0, (backend, name)
            assert measure["nodes_median"] >= 1, (backend, name)
        assert result["search_nodes"]["exact_name"]["total_matched_median"] >= 1
    assert "| neighbourhood_hops2_limit50_ms" in done.stdout
    assert "relational p50" in done.stdout
