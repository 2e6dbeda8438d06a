"""How fast the web console's pages (/ui) answer on a tenant filled with LoCoMo conversations.

    .venv/bin/python benchmarks/console.py [--dataset ../shared/datasets/locomo10.json]
        [--conversations 2] [--requests 30] [--smoke] [--out benchmarks/results/console.json]

A fresh embedded database in a temporary data dir, one tenant: the first
--conversations LoCoMo conversations committed session by session through the real
write path (commit_conversation with wait=True: windows, gate, dedup, then the
offline extractor, so facts and graph entities exist; no LLM), plus a few notes,
some of which the gate rejects. Then the app is served by uvicorn on 127.0.0.1 in
auth.mode = local (keyless, no sign-in) and one httpx client (keep-alive) asks
for each page once to warm up, then --requests times: overview, search (a LoCoMo
question), memories, one memory (the one with most facts), facts, facts of the
commonest subject, one fact's timeline, gate, graph around a speaker, conversations,
the biggest conversation's transcript, handoffs. Every answer must be a 200.
Reported per page: p50/p95 of the request's wall time, and the page's size; with
the tenant's size, the ingest time and the machine (CPUs, load average).

`--smoke`: the first conversation's first two sessions (a synthetic LoCoMo-shaped
conversation when the dataset is absent) and 3 requests a page, in seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx

from app.config import Settings
from app.errors import NotFound
from app.services.graph import reads
from app.services.graph.neighbourhood import entity_neighbourhood
from app.services.memory import ingest as ingest_service
from app.services.memory.commit import ConversationIn, NoteIn, commit_conversation, commit_note
from app.services.runtime import Elephant

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/ is not installed

from benchmarks.auth import served
from benchmarks.common import note, percentiles, write_locomo_smoke_sample
from benchmarks.locomo import SCORED, load_questions

DEFAULT_DATASET = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "locomo10.json"
TENANT = "console-bench"
STORED_NOTES = 5
# Short, vague texts the offline gate refuses: the gate page then lists rejections.
REJECTED_NOTES = ("ok thanks", "sure, sounds good", "hmm ok", "lol", "yes")


def count(elephant: Elephant, sql: str) -> int:
    with elephant.db.tenant(TENANT) as conn:
        row = conn.execute(sql).fetchone()
        return int(row[0]) if row and row[0] is not None else 0


def first(elephant: Elephant, sql: str) -> str:
    with elephant.db.tenant(TENANT) as conn:
        row = conn.execute(sql).fetchone()
    if row is None or row[0] is None:
        raise SystemExit(f"the tenant has nothing for: {sql}")
    return str(row[0])


def fill(elephant: Elephant, conversations: Sequence[ConversationIn]) -> dict[str, Any]:
    """Commit the conversations (facts extracted as they go) and the notes; seconds taken."""
    started = time.perf_counter()
    facts = 0
    for number, conversation in enumerate(conversations, start=1):
        facts += commit_conversation(elephant, TENANT, conversation, wait=True).facts or 0
        if number % 10 == 0 or number == len(conversations):
            took = time.perf_counter() - started
            print(f"  committed {number}/{len(conversations)} sessions ({took:.0f}s)", flush=True)
    rng = random.Random(31)
    notes = [NoteIn(text=note(rng, n), source="bench") for n in range(STORED_NOTES)]
    notes += [NoteIn(text=text, source="chat") for text in REJECTED_NOTES]
    statuses = [commit_note(elephant, TENANT, item, wait=True).status for item in notes]
    seconds = time.perf_counter() - started
    if "rejected" not in statuses:
        raise SystemExit(f"the gate rejected none of the notes ({statuses}): no rejections to show")
    return {"seconds": round(seconds, 1), "facts_extracted": facts, "notes": statuses}


def tenant_size(elephant: Elephant) -> dict[str, int]:
    return {
        "memories": count(elephant, "SELECT count(*) FROM memories"),
        "windows": count(elephant, "SELECT count(*) FROM memories WHERE kind = 'window'"),
        "notes": count(elephant, "SELECT count(*) FROM memories WHERE kind = 'note'"),
        "facts": count(elephant, "SELECT count(*) FROM facts"),
        "turns": count(elephant, "SELECT count(*) FROM turns"),
        "conversations": count(elephant, "SELECT count(*) FROM conversations"),
        "gate_decisions": count(elephant, "SELECT count(*) FROM admission_log"),
        "gate_rejected": count(
            elephant, "SELECT count(*) FROM admission_log WHERE decision = 'rejected'"
        ),
        "graph_entities": reads.read_graph(elephant, TENANT, limit=1).total,
    }


def graph_entity(elephant: Elephant, speakers: Sequence[str]) -> str:
    """A speaker the graph knows (the centre of the graph page), else its first entity."""
    for name in speakers:
        try:
            entity_neighbourhood(elephant, TENANT, name, hops=1)
            return name
        except NotFound:
            continue
    listing = reads.read_graph(elephant, TENANT, limit=1)
    if not listing.items:
        raise SystemExit("the graph is empty: no entity for the graph page")
    return listing.items[0].name


def page_paths(elephant: Elephant, question: str, speakers: Sequence[str]) -> dict[str, str]:
    """Every page timed, by name: its path and query under /ui/t/<tenant>."""
    memory = first(
        elephant,
        "SELECT m.id FROM memories m LEFT JOIN facts f ON f.memory_id = m.id "
        "GROUP BY m.id ORDER BY count(f.id) DESC, m.id LIMIT 1",
    )
    # The fact with the longest history behind it (the timeline page draws its chain).
    fact = first(
        elephant,
        "SELECT f.id FROM facts f ORDER BY (SELECT count(*) FROM facts o "
        "WHERE o.superseded_by = f.id) DESC, f.recorded_at, f.id LIMIT 1",
    )
    subject = first(
        elephant,
        "SELECT subject FROM facts WHERE subject IS NOT NULL "
        "GROUP BY subject ORDER BY count(*) DESC, subject LIMIT 1",
    )
    conversation = first(
        elephant,
        "SELECT conversation_id FROM turns GROUP BY conversation_id "
        "ORDER BY count(*) DESC, conversation_id LIMIT 1",
    )
    entity = graph_entity(elephant, speakers)
    base = f"/ui/t/{TENANT}"
    return {
        "overview": f"{base}/",
        "search": f"{base}/search?{urlencode({'query': question})}",
        "memories": f"{base}/memories",
        "memory": f"{base}/memories/{memory}",
        "facts": f"{base}/facts",
        "facts_subject": f"{base}/facts?{urlencode({'subject': subject})}",
        "fact_timeline": f"{base}/facts/{fact}",
        "gate": f"{base}/gate",
        "graph": f"{base}/graph?{urlencode({'entity': entity})}",
        "conversations": f"{base}/conversations",
        "conversation": f"{base}/conversations/{conversation}",
        "handoffs": f"{base}/conversations/handoffs",
    }


def fetch(client: httpx.Client, name: str, path: str) -> httpx.Response:
    answer = client.get(path)
    if answer.status_code != 200:
        raise SystemExit(
            f"{name}: GET {path} answered {answer.status_code}, not 200\n{answer.text[:2000]}"
        )
    return answer


def time_pages(url: str, paths: dict[str, str], requests: int) -> dict[str, dict[str, Any]]:
    timings: dict[str, dict[str, Any]] = {}
    with httpx.Client(base_url=url, timeout=120, follow_redirects=False) as client:
        for name, path in paths.items():
            answer = fetch(client, name, path)  # warm-up: templates, plans, the embedder
            samples = []
            for _ in range(requests):
                started = time.perf_counter()
                answer = fetch(client, name, path)
                samples.append(time.perf_counter() - started)
            timings[name] = {
                "path": path,
                **percentiles(samples),
                "kb": round(len(answer.content) / 1024, 1),
            }
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument(
        "--conversations", type=int, default=2, help="LoCoMo conversations in the tenant."
    )
    parser.add_argument("--requests", type=int, default=30, help="Timed requests a page.")
    parser.add_argument(
        "--smoke", action="store_true", help="two sessions of one conversation, 3 requests a page"
    )
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/console.json"))
    args = parser.parse_args()
    if args.smoke:
        args.conversations, args.requests = 1, 3
    load_before = [round(value, 2) for value in os.getloadavg()]

    with tempfile.TemporaryDirectory(prefix="elephant-console-") as tmp:
        dataset, source = args.dataset, str(args.dataset)
        if args.smoke:
            dataset, source = write_locomo_smoke_sample(args.dataset, Path(tmp))
        samples = json.loads(dataset.read_text())[: args.conversations]
        items = ingest_service.read_items(dataset, "locomo", "locomo", split_tenants=True)
        tenants = list(dict.fromkeys(item.tenant for item in items))[: args.conversations]
        sessions = [
            item.payload
            for item in items
            if item.tenant in tenants and isinstance(item.payload, ConversationIn)
        ]
        questions = [q for q in load_questions(samples) if q.category in SCORED]
        if not questions:
            raise SystemExit(f"{source}: no question to search for")
        question = questions[0].question
        speakers = [
            str(sample["conversation"][key])
            for sample in samples
            for key in ("speaker_a", "speaker_b")
        ]

        settings = Settings.model_validate(
            {
                "data_dir": str(Path(tmp) / "data"),
                "log": {"level": "WARNING"},
                "auth": {"mode": "local"},
                "worker": {"enabled": False},
            }
        )
        elephant = Elephant.open(settings, use_llm_from_settings=False)
        try:
            print(f"committing {len(samples)} conversation(s), {len(sessions)} sessions")
            ingest = fill(elephant, sessions)
            size = tenant_size(elephant)
            paths = page_paths(elephant, question, speakers)
            with served(settings, elephant) as url:
                pages = time_pages(url, paths, args.requests)
        finally:
            elephant.close()

    result: dict[str, Any] = {
        "smoke": args.smoke,
        "dataset": source,
        "conversations": len(samples),
        "sessions": len(sessions),
        "requests": args.requests,
        "tenant": size,
        "ingest_s": ingest["seconds"],
        "ingest": ingest,
        "question": question,
        "cpus": os.cpu_count(),
        "load_avg_before": load_before,
        "load_avg_after": [round(value, 2) for value in os.getloadavg()],
        "pages": pages,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(
        f"\ntenant: {size['memories']} memories ({size['windows']} windows, {size['notes']} "
        f"notes), {size['facts']} facts, {size['turns']} turns in {size['conversations']} "
        f"conversations, {size['gate_rejected']} of {size['gate_decisions']} gate decisions "
        f"rejected, {size['graph_entities']} graph entities; ingest {ingest['seconds']} s"
    )
    print(
        f"{args.requests} requests a page after one warm-up; {result['cpus']} CPUs, load "
        f"average {load_before} before, {result['load_avg_after']} after\n"
    )
    print(f"{'page':<16}{'p50 ms':>9}{'p95 ms':>9}{'KB':>8}  path")
    for name, row in pages.items():
        shown = row["path"] if len(row["path"]) <= 70 else row["path"][:67] + "..."
        print(f"{name:<16}{row['p50_ms']:>9}{row['p95_ms']:>9}{row['kb']:>8}  {shown}")
    print(f"\nwritten to {args.out}")


if __name__ == "__main__":
    main()
