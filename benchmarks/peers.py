"""Elephant side by side with the memory systems and stores users pick instead: the same
LoCoMo conversations, the same embeddings, one run.

    make peers          # once: the peers' packages, into .venv-peers (never into .venv)
    .venv-peers/bin/python benchmarks/peers.py [--dataset ../shared/datasets/locomo10.json]
        [--peers elephant,elephant_http,mem0,mcp_memory_service,chroma,lancedb,qdrant,
                 qdrant_edge,seeds,langgraph_store,langchain_pg,milvus_lite]
        [--sizes 20000,100000] [--queries 100] [--cache DIR] [--smoke]
        [--out benchmarks/results/peers.json]

Every embedding is computed once, by Elephant's model (all-MiniLM-L6-v2, 384-d,
L2-normalised): the LoCoMo windows (5 turns, stride 2, rendered as Elephant renders
them: "[8 May 2023] Caroline: ...") and the questions, kept in --cache between runs.
Each system gets the vectors with the texts (no system embeds, no LLM runs: mem0 with
infer=False). Systems that store raw text store those windows, one tenant (collection,
table, user) per LoCoMo conversation; Elephant ingests the conversations through its
own write path (windows, gate, dedup, offline fact extraction, graph) and is scored on
its own hits (windows and facts) by their source turns. The Postgres stores (LangGraph's
PostgresStore, langchain-postgres) run on Elephant's embedded server itself (the one its
LoCoMo run started, kept up for the synthetic sizes), each in a database of its own.

Measured per system:
- ingest: seconds to store all 10 conversations, embedding excluded (Elephant: the
  model time spent on the facts it extracted is subtracted);
- recall@1/5/10/60 on categories 1-4 (one of the first k hits holds an evidence turn;
  as benchmarks/locomo.py);
- search p50/p95 per question at LoCoMo size, then at each --sizes synthetic corpus
  (benchmarks/scale.py's generator: texts and clustered vectors, one tenant; Elephant
  by the scale benchmark's bulk load) over --queries queries;
- what each supports (hybrid, filters, transactions, tenant isolation, temporal facts,
  graph), its version and settings.
A system that cannot run here is reported with the reason, never dropped. The table is
printed, the JSON written to --out, and recall@10 against p50 plotted next to it (PNG,
matplotlib). Targets for Elephant are checked and printed beside the numbers.

`--smoke`: two sessions of one conversation, one 500-memory size, 5 queries (seconds;
tests/benchmarks/test_benchmark_smoke.py runs it with the peers the product venv has: Elephant).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/ is not installed

from app.config import Settings
from app.providers.embedder import LocalEmbedder
from app.services.memory import ingest as ingest_service
from app.services.memory.commit import ConversationIn
from app.services.memory.windows import WindowTurn, build_windows
from benchmarks.common import percentiles, write_locomo_smoke_sample
from benchmarks.locomo import DEFAULT_DATASET, SCORED, TENANT_PREFIX, load_questions, turn_ids
from benchmarks.peers import _postgres
from benchmarks.peers.base import Doc, Hit, Peer, Unavailable, Vector
from benchmarks.scale import TENANT as SCALE_TENANT

PEERS = ("elephant", "elephant_http", "mem0", "mcp_memory_service", "chroma", "lancedb")
PEERS += ("qdrant", "qdrant_edge", "seeds")
# the Postgres stores a team on Postgres picks instead (on Elephant's own embedded server,
# benchmarks/peers/_postgres.py), and Milvus Lite
PEERS += ("langgraph_store", "langchain_pg", "milvus_lite")
KS = (1, 5, 10, 60)
INSTALL_HINT = "`make peers` installs it into .venv-peers: run this with .venv-peers/bin/python"
K = 60
# Searches every peer runs before it is timed (caches, connections, the first plan), the
# same for every system; the questions timed after include these again.
WARMUP = 20
WINDOW, STRIDE = 5, 2


# ---------------------------------------------------------------- data


@dataclass
class LoCoMo:
    items: list[ingest_service.Item]
    docs: list[Doc]
    questions: list[Any]  # benchmarks.locomo.Question, categories 1-4 with evidence
    vectors: dict[str, Vector]  # every text the run embedded -> its vector


def windows_of(item: ingest_service.Item) -> list[tuple[str, frozenset[str]]]:
    """The session's 5/2 windows as Elephant cuts and renders them (app.services.memory.windows)."""
    conversation = item.payload
    assert isinstance(conversation, ConversationIn)
    turns = [
        WindowTurn(seq, t.speaker, t.text, t.timestamp or conversation.session_date, t.id)
        for seq, t in enumerate(conversation.turns)
    ]
    return [(w.text, turn_ids(w.source_turn_ids)) for w in build_windows(turns, WINDOW, STRIDE)]


def embed_all(texts: list[str], cache: Path) -> dict[str, Vector]:
    """Vectors of ``texts`` by the product's model, cached on disk by the texts' digest."""
    digest = hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:16]
    path = cache / f"minilm-{digest}.npy"
    if path.exists():
        matrix = np.load(path)
        print(f"embeddings: {len(texts)} from {path}")
    else:
        started = time.perf_counter()
        model = LocalEmbedder(Settings().embedding)
        matrix = np.asarray(model.embed_documents(texts), dtype=np.float32)
        cache.mkdir(parents=True, exist_ok=True)
        np.save(path, matrix)
        print(f"embeddings: {len(texts)} computed in {time.perf_counter() - started:.1f} s")
    return {text: matrix[i] for i, text in enumerate(texts)}


def load_locomo(dataset: Path, cache: Path) -> LoCoMo:
    samples = json.loads(dataset.read_text())
    items = ingest_service.read_items(dataset, TENANT_PREFIX, "locomo", split_tenants=True)
    windows = [(item.tenant, text, ids) for item in items for text, ids in windows_of(item)]
    questions = [q for q in load_questions(samples) if q.category in SCORED and q.evidence]
    texts = list(dict.fromkeys([text for _, text, _ in windows] + [q.question for q in questions]))
    vectors = embed_all(texts, cache)
    docs = [
        Doc(f"w{i}", tenant, text, vectors[text], ids)
        for i, (tenant, text, ids) in enumerate(windows)
    ]
    return LoCoMo(items, docs, questions, vectors)


@dataclass
class Synthetic:
    size: int
    corpus: Any  # benchmarks.scale.Corpus
    docs: list[Doc]
    queries: list[tuple[str, Vector]]


def synthetic(size: int, queries: int, seed: int = 17) -> Synthetic:
    """benchmarks/scale.py's corpus: texts with clustered vectors, no model."""
    from benchmarks.scale import make_corpus, make_queries, make_vocabulary

    rng = np.random.default_rng(seed)
    vocab = make_vocabulary(rng)
    corpus = make_corpus(rng, vocab, size)
    docs = [
        Doc(
            f"s{i}",
            SCALE_TENANT,
            text,
            np.asarray(corpus.memory_vectors[i], np.float32),
            frozenset(),
        )
        for i, text in enumerate(corpus.memory_texts)
    ]
    asked = [
        (q.text, np.asarray(q.vectors[0], np.float32))
        for q in make_queries(rng, vocab, corpus, queries)
    ]
    return Synthetic(size, corpus, docs, asked)


# ---------------------------------------------------------------- peers


@dataclass
class Outcome:
    """One system's row."""

    name: str
    available: bool
    reason: str | None = None
    version: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    capabilities: dict[str, str] = field(default_factory=dict)
    ingest_s: float | None = None
    ingest_note: str | None = None
    recall: dict[str, float] = field(default_factory=dict)
    locomo_ms: dict[str, float] = field(default_factory=dict)
    scale: dict[str, dict[str, Any]] = field(default_factory=dict)
    recording_ab: dict[str, Any] = field(default_factory=dict)  # Elephant in process


def make_peers(names: list[str], vectors: dict[str, Vector]) -> tuple[list[Peer], list[Outcome]]:
    """The adapters that load, and an Outcome with the reason for each that does not."""
    made: list[Peer] = []
    missing: list[Outcome] = []
    for module_name in dict.fromkeys("elephant" if n.startswith("elephant") else n for n in names):
        try:
            module = importlib.import_module(f"benchmarks.peers.{module_name}")
            found = module.make(vectors) if module_name == "elephant" else module.make()
        except Unavailable as exc:
            reason = str(exc)
            if "import" in reason or "install" in reason:
                reason += f" ({INSTALL_HINT})"
            missing.append(Outcome(module_name, False, reason=reason))
            continue
        except ImportError as exc:
            reason = f"not installed ({exc}): {INSTALL_HINT}"
            missing.append(Outcome(module_name, False, reason=reason))
            continue
        # a variant the list does not name (lancedb-ivfpq) comes with its module
        made += [
            p for p in found if p.name in names or (p.name not in PEERS and module_name in names)
        ]
    return made, missing


def timed(call: Callable[[], Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    result = call()
    return result, time.perf_counter() - started


def first_rank(hits: list[Hit], evidence: frozenset[str]) -> int | None:
    for rank, hit in enumerate(hits, start=1):
        if hit.turn_ids & evidence:
            return rank
    return None


def run_locomo(peer: Peer, data: LoCoMo, work: Path, row: Outcome) -> None:
    peer.open(work)  # a peer sharing another's data serves it (the other opened first)
    if getattr(peer, "shares_data_with", None) is not None:
        row.ingest_note = f"the database of {peer.shares_data_with}"  # type: ignore[attr-defined]
    elif hasattr(peer, "ingest_conversations"):
        _, seconds = timed(lambda: peer.ingest_conversations(data.items))  # type: ignore[attr-defined]
        model = float(getattr(peer, "embedding_seconds", 0.0))
        row.ingest_s = round(seconds - model, 2)
        row.ingest_note = (
            f"{len(data.items)} sessions through the write path incl. fact extraction; "
            f"{model:.1f} s of embedding extracted facts left out"
        )
    else:
        _, seconds = timed(lambda: peer.ingest(data.docs))
        row.ingest_s = round(seconds, 2)
        row.ingest_note = f"{len(data.docs)} windows"
    for question in data.questions[:WARMUP]:  # warm up caches and connections
        peer.search(question.tenant, question.question, data.vectors[question.question], K)
    ranks: list[int | None] = []
    times: list[float] = []
    sql = sql_times(peer)
    for question in data.questions:
        vector = data.vectors[question.question]
        hits, seconds = timed(lambda q=question, v=vector: peer.search(q.tenant, q.question, v, K))
        times.append(seconds)
        ranks.append(first_rank(hits, question.evidence))
    row.recall = {
        f"recall@{k}": round(sum(1 for r in ranks if r is not None and r <= k) / len(ranks), 4)
        for k in KS
    }
    row.locomo_ms = {**percentiles(times, 3), **sql_percentiles(sql)}
    if hasattr(peer, "record_access"):
        pairs = [(q.tenant, q.question, data.vectors[q.question]) for q in data.questions]
        row.recording_ab = recording_ab(peer, pairs, K)


def recording_ab(peer: Peer, queries: list[tuple[str, str, Vector]], k: int) -> dict[str, Any]:
    """Search with access recording on and off, interleaved in one run: query i is recorded
    in the first round when i is even and in the second when it is odd, so each setting
    sees every query once, never the same query twice in a row."""
    times: dict[bool, list[float]] = {True: [], False: []}
    for round_ in (0, 1):
        for i, (tenant, text, vector) in enumerate(queries):
            record = (i + round_) % 2 == 0
            peer.record_access = record  # type: ignore[attr-defined]
            times[record].append(
                timed(lambda t=tenant, q=text, v=vector: peer.search(t, q, v, k))[1]
            )
    peer.record_access = True  # type: ignore[attr-defined]
    on, off = percentiles(times[True], 3), percentiles(times[False], 3)
    return {
        "recorded": on,
        "unrecorded": off,
        "p50_ratio_recorded_over_unrecorded": round(on["p50_ms"] / off["p50_ms"], 3),
        "order": "interleaved: each query once with and once without, alternating",
    }


def search_times(peer: Peer, data: Synthetic) -> dict[str, float]:
    for text, vector in data.queries[:WARMUP]:  # warm up
        peer.search(SCALE_TENANT, text, vector, 10)
    sql = sql_times(peer)
    times = [
        timed(lambda t=text, v=vector: peer.search(SCALE_TENANT, t, v, 10))[1]
        for text, vector in data.queries
    ]
    return {**percentiles(times, 3), **sql_percentiles(sql)}


def sql_times(peer: Peer) -> list[float] | None:
    """Elephant reports its SQL statement's time per search (explain): emptied, then filled
    by the searches that follow."""
    found = getattr(peer, "sql_ms", None)
    if isinstance(found, list):
        found.clear()
    return found


def sql_percentiles(times: list[float] | None) -> dict[str, float]:
    if not times:
        return {}
    cell = percentiles(times, 3)
    return {"sql_p50_ms": cell["p50_ms"], "sql_p95_ms": cell["p95_ms"]}


def run_scale(
    peer: Peer, data: Synthetic, work: Path, sharers: list[Peer]
) -> dict[str, dict[str, Any]]:
    """The peer's row at this size, and those of the peers that serve its data (Elephant
    over HTTP), measured on the same store while it is open."""
    limit = getattr(peer, "max_docs", None)
    if limit is not None and data.size > limit:
        return {peer.name: {"skipped": getattr(peer, "max_docs_reason", f"over {limit}")}}
    peer.open(work)
    try:
        if hasattr(peer, "ingest_corpus"):
            _, seconds = timed(lambda: peer.ingest_corpus(data.corpus))  # type: ignore[attr-defined]
        else:
            _, seconds = timed(lambda: peer.ingest(data.docs))
        found = {peer.name: {"ingest_s": round(seconds, 2), **search_times(peer, data)}}
        for sharer in sharers:
            sharer.open(work)
            try:
                found[sharer.name] = {"ingest_s": None, **search_times(sharer, data)}
            finally:
                sharer.close()
    finally:
        peer.close()
    return found


# ---------------------------------------------------------------- report


def print_table(rows: list[Outcome], sizes: list[int]) -> None:
    head = f"{'system':<20} {'ingest s':>9} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'R@60':>6}"
    head += f" {'LoCoMo p50/p95 ms':>18}"
    head += "".join(f" {f'{size_label(size)} p50/p95 ms':>18}" for size in sizes)
    print(head)
    for row in rows:
        if not row.available:
            print(f"{row.name:<20} unavailable: {row.reason}")
            continue
        recall = " ".join(f"{row.recall.get(f'recall@{k}', float('nan')):>6.3f}" for k in KS)
        ingest = "shared" if row.ingest_s is None else f"{row.ingest_s:.1f}"
        line = f"{row.name:<20} {ingest:>9} {recall} {_ms(row.locomo_ms):>18}"
        for size in sizes:
            cell = row.scale.get(str(size), {})
            line += f" {cell.get('skipped', '')[:18] or _ms(cell):>18}"
        print(line)
    for row in rows:
        ab = row.recording_ab
        if ab:
            print(
                f"{row.name}: access recording on / off (interleaved, LoCoMo questions): "
                f"p50 {ab['recorded']['p50_ms']:.2f} / {ab['unrecorded']['p50_ms']:.2f} ms, "
                f"p95 {ab['recorded']['p95_ms']:.2f} / {ab['unrecorded']['p95_ms']:.2f} ms"
            )
    print(f"warm-up: {WARMUP} searches per system before each timed series")
    print()
    print("what each supports:")
    for row in rows:
        if row.available:
            print(f"  {row.name}: " + "; ".join(f"{k}: {v}" for k, v in row.capabilities.items()))


def size_label(size: int) -> str:
    return f"{size // 1000}k" if size >= 1000 and size % 1000 == 0 else str(size)


def _ms(cell: dict[str, Any]) -> str:
    if "p50_ms" not in cell:
        return "-"
    return f"{cell['p50_ms']:.2f} / {cell['p95_ms']:.2f}"


def targets(rows: list[Outcome], sizes: list[int]) -> dict[str, Any]:
    """The issue's targets for Elephant, checked against this run."""
    by_name = {row.name: row for row in rows if row.available}
    found: dict[str, Any] = {}
    if "elephant" in by_name:
        best = max(by_name.values(), key=lambda r: r.recall.get("recall@10", -1.0))
        found["highest recall@10"] = {
            "met": best.name.startswith("elephant"),
            "best": best.name,
            "elephant": by_name["elephant"].recall.get("recall@10"),
        }
    http = by_name.get("elephant_http")
    size = "20000" if "20000" in {str(s) for s in sizes} else str(min(sizes)) if sizes else None
    if http is not None and size is not None and "p50_ms" in http.scale.get(size, {}):
        ours = http.scale[size]["p50_ms"]
        for other in ("mem0", "mcp_memory_service"):
            theirs = by_name.get(other, Outcome(other, False)).scale.get(size, {}).get("p50_ms")
            found[f"end-to-end search >= 10x faster than {other} at {size}"] = (
                {
                    "met": theirs >= 10 * ours,
                    "elephant_http_p50_ms": ours,
                    f"{other}_p50_ms": theirs,
                }
                if theirs
                else {"met": None, "why": f"{other} has no {size} result"}
            )
    big = str(max(sizes)) if sizes else None
    own = by_name.get("elephant")
    if own is not None and big is not None and "p50_ms" in own.scale.get(big, {}):
        hybrid = {  # the in-process stores that fuse keyword and dense search
            row.name: row.scale[big]["p50_ms"]
            for row in by_name.values()
            if not row.name.startswith("elephant")
            and row.capabilities.get("hybrid", "").startswith("yes")
            and "p50_ms" in row.scale.get(big, {})
        }
        if hybrid:
            fastest = min(hybrid, key=lambda name: hybrid[name])
            cell = own.scale[big]
            sql_p50 = cell.get("sql_p50_ms", cell["p50_ms"])  # the statement, as the issue says
            found[f"SQL search within 3x of the fastest in-process hybrid store at {big}"] = {
                "met": sql_p50 <= 3 * hybrid[fastest],
                "elephant_sql_p50_ms": sql_p50,
                "elephant_search_p50_ms": cell["p50_ms"],
                "fastest": fastest,
                "fastest_p50_ms": hybrid[fastest],
            }
    return found


def plot(rows: list[Outcome], path: Path) -> str:
    """recall@10 against LoCoMo search p50, one point a system (PNG)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "no plot: matplotlib is not installed (make peers)"
    shown = [r for r in rows if r.available and r.recall and r.locomo_ms]
    figure, axes = plt.subplots(figsize=(7, 4.5), dpi=120)
    for row in shown:
        x, y = row.locomo_ms["p50_ms"], row.recall["recall@10"]
        axes.scatter([x], [y], s=40)
        axes.annotate(row.name, (x, y), textcoords="offset points", xytext=(6, 4), fontsize=8)
    axes.set_xscale("log")
    axes.set_xlabel("search p50 per question, LoCoMo (ms, log scale)")
    axes.set_ylabel("recall@10, LoCoMo categories 1-4")
    axes.set_title("Same data, same MiniLM embeddings: recall@10 vs latency")
    axes.grid(True, which="both", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
    return str(path)


# ---------------------------------------------------------------- main


@contextlib.contextmanager
def workdir(root: Path, name: str) -> Iterator[Path]:
    path = root / name
    path.mkdir(parents=True)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--peers", default=",".join(PEERS))
    parser.add_argument("--sizes", default="20000,100000")
    parser.add_argument("--queries", type=int, default=100, help="per synthetic size")
    parser.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir()) / "elephant-peers"
    )
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/peers.json"))
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    names = [n.strip() for n in args.peers.split(",") if n.strip()]
    unknown = set(names) - set(PEERS)
    if unknown:
        parser.error(f"unknown peers {sorted(unknown)}; choose from {list(PEERS)}")
    sizes = [500] if args.smoke else [int(s) for s in args.sizes.split(",") if s.strip()]
    queries = 5 if args.smoke else args.queries
    started = time.perf_counter()
    load_at_start = [round(x, 2) for x in os.getloadavg()]
    print(f"load average at start: {load_at_start} ({os.cpu_count()} cpus)")

    with tempfile.TemporaryDirectory(prefix="elephant-peers-") as tmp, contextlib.ExitStack() as pg:
        root = Path(tmp)
        # the Postgres peers share Elephant's server: the one of its LoCoMo run's data dir
        # (root/elephant/locomo, as below), released before the directory goes
        _postgres.use(root / "elephant" / "locomo")
        pg.callback(_postgres.shutdown)
        dataset = args.dataset
        if args.smoke:
            dataset, _ = write_locomo_smoke_sample(args.dataset, root)
        data = load_locomo(dataset, args.cache)
        print(
            f"LoCoMo: {len(data.items)} sessions, {len(data.docs)} windows, "
            f"{len(data.questions)} questions (categories 1-4 with evidence)"
        )
        peers, rows = make_peers(names, data.vectors)
        runs: dict[str, Outcome] = {}
        ordered = sorted(peers, key=lambda p: getattr(p, "shares_data_with", None) is not None)
        with contextlib.ExitStack() as stack:
            for peer in ordered:
                row = Outcome(peer.name, True, version=peer.version())
                runs[peer.name] = row
                print(f"\n== {peer.name}: {row.version}")
                shared = getattr(peer, "shares_data_with", None)
                work = root / (shared or peer.name) / "locomo"
                work.mkdir(parents=True, exist_ok=True)
                try:
                    run_locomo(peer, data, work, row)
                    row.settings = peer.settings()
                    row.capabilities = vars(peer.capabilities())
                except Exception as exc:  # noqa: BLE001 (a peer's failure is its row, not the run's)
                    row.available, row.reason = False, f"failed: {type(exc).__name__}: {exc}"
                print(f"   ingest {row.ingest_s} s, {row.recall}, {row.locomo_ms}", flush=True)
                if shared is None:
                    stack.callback(peer.close)
                else:
                    peer.close()
        for size in sizes:
            corpus = synthetic(size, queries)
            print(f"\n== synthetic {size}: {len(corpus.docs)} memories, {queries} queries")
            for peer in ordered:
                row = runs[peer.name]
                if not row.available or getattr(peer, "shares_data_with", None) is not None:
                    continue
                sharers = [
                    p
                    for p in ordered
                    if getattr(p, "shares_data_with", None) == peer.name and runs[p.name].available
                ]
                try:
                    with workdir(root, f"{peer.name}-{size}") as work:
                        cells = run_scale(peer, corpus, work, sharers)
                except Exception as exc:  # noqa: BLE001
                    failed = {"skipped": f"failed: {type(exc).__name__}: {exc}"}
                    cells = {p.name: failed for p in [peer, *sharers]}
                for name, cell in cells.items():
                    runs[name].scale[str(size)] = cell
                    print(f"   {name}: {cell}", flush=True)

    rows = list(runs.values()) + rows
    print()
    print_table(rows, sizes)
    checked = targets(rows, sizes)
    for name, verdict in checked.items():
        print(f"target {name}: {verdict}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    picture = plot(rows, args.out.with_suffix(".png"))
    report = {
        "benchmark": "peers",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "loadavg_at_start": load_at_start,
        "loadavg_at_end": [round(x, 2) for x in os.getloadavg()],
        "warmup": f"{WARMUP} searches per system before each timed series (LoCoMo, each "
        "size); Elephant's access recording on as shipped (batched aside), and an "
        "interleaved on/off A/B in recording_ab",
        "dataset": str(args.dataset),
        "smoke": args.smoke,
        "embedding": "all-MiniLM-L6-v2 (384-d, normalised), computed once, given to all",
        "windows": {"size": WINDOW, "stride": STRIDE, "count": len(data.docs)},
        "questions": len(data.questions),
        "sizes": sizes,
        "queries_per_size": queries,
        "systems": [vars(row) for row in rows],
        "targets": checked,
        "plot": picture,
        "seconds": round(time.perf_counter() - started, 1),
    }
    args.out.write_text(json.dumps(report, indent=2, default=str))
    print(f"\nwrote {args.out} and {picture} in {report['seconds']} s")
    print(f"load average at start {load_at_start}, at end {report['loadavg_at_end']}")


if __name__ == "__main__":
    main()
