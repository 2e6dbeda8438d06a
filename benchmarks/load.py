"""Load: N writers and N readers against a real `elephant serve` for a fixed time, and the
embedder before and after issue 30 compared in one run.

    .venv/bin/python benchmarks/load.py --compare [--clients 8] [--seconds 30] [--rounds 2]
                                        [--mix notes|conversations|both]
    .venv/bin/python benchmarks/load.py [--clients 8] [--seconds 60] [--mix notes] [--smoke]
                                        [--out benchmarks/results/load.json]

Each server runs on a fresh embedded database in a temporary data dir, in its own process
(keyless local mode on 127.0.0.1, the in-process worker extracting facts). Writers commit
distinct notes (POST /commit) or distinct 10-turn conversations (POST /commit_conversation;
``--mix both``: half the writers each), readers search (GET /search) with distinct queries:
no text is sent twice, so the embedder's cache of recent texts (embedding.cache_size)
cannot flatter a result. A warm-up search, commit and conversation (not counted) load the
model before the clock starts.

``--compare`` (the way to run it; ``--mix both`` unless given) alternates servers started
with ELEPHANT_EMBEDDING_RUNTIME=torch and ELEPHANT_EMBEDDING_WINDOW_VECTORS=model (before:
the model on torch reading every window again) and with the defaults (after: onnxruntime,
window vectors pooled from the turns' token sums), ``--rounds`` of each, in the order
before, after, after, before, ... so neither always goes first, each on its own data dir.
Per configuration: commits/s, conversations/s and turns/s, searches/s, p50/p95 of each,
errors, the acknowledged-writes check, and the model's share of the busy CPU. A table
before -> after with the ratio is printed; everything goes into the JSON.

The model's share: the server is this script in ``--serve`` mode, which wraps the
encoders' ``pool`` (tokenizer + forward passes) to add up the calling thread's CPU time
in it, plus the CPU of the process's threads that are not Python threads (onnxruntime's
and torch's intra-op pools, the tokenizer's; also numpy's BLAS pool, idle here), shown in
/metrics as elephant_bench_*. It is set against the round's busy CPU (the server process
plus its PostgreSQL processes, from psutil) and against wall time x cores. Also recorded:
the embedding seconds callers waited (elephant_embedding_seconds; concurrent waits overlap,
so it is no CPU measure) and the texts the model read. Every result prints the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psutil

from app.config import Settings
from app.db import Database

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/ is not installed

from benchmarks import common
from benchmarks.common import MONTHS, PEOPLE, PLACES, THINGS, VERBS, note, percentiles

BEFORE = {"ELEPHANT_EMBEDDING_RUNTIME": "torch", "ELEPHANT_EMBEDDING_WINDOW_VECTORS": "model"}
AFTER: dict[str, str] = {}  # the defaults: onnx, pooled
CONFIG_KEYS = ("ELEPHANT_EMBEDDING_RUNTIME", "ELEPHANT_EMBEDDING_WINDOW_VECTORS")
TURNS = 10
CORES = psutil.cpu_count() or 1


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# ---------------------------------------------------------------- the probed server


def serve_probed() -> None:
    """`elephant serve --auth local` in this process, with the model's CPU time counted."""
    import prometheus_client
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    from app.providers import encoders
    from app.services.ops import metrics

    lock = threading.Lock()
    totals = {"caller_cpu": 0.0, "busy": 0.0, "calls": 0, "texts": 0, "pooled_windows": 0}
    runtimes: set[str] = set()

    def timed(original: Callable[..., Any]) -> Callable[..., Any]:
        def pool(self: Any, texts: list[str]) -> Any:
            wall, cpu = time.perf_counter(), time.thread_time()
            try:
                return original(self, texts)
            finally:
                with lock:
                    totals["caller_cpu"] += time.thread_time() - cpu
                    totals["busy"] += time.perf_counter() - wall
                    totals["calls"] += 1
                    totals["texts"] += len(texts)
                    runtimes.add(str(getattr(self, "runtime", "?")))

        return pool

    for cls in (getattr(encoders, "OnnxEncoder", None), getattr(encoders, "TorchEncoder", None)):
        if cls is not None and hasattr(cls, "pool"):
            cls.pool = timed(cls.pool)
    try:
        from app.services.memory import commit

        pooled = getattr(commit, "pooled_windows")  # noqa: B009 (imported there, not exported)

        def counted(*args: Any, **kwargs: Any) -> Any:
            with lock:
                totals["pooled_windows"] += 1
            return pooled(*args, **kwargs)

        setattr(commit, "pooled_windows", counted)  # noqa: B010
    except (ImportError, AttributeError):
        pass
    tick = os.sysconf("SC_CLK_TCK")

    def native_cpu() -> float:
        """CPU seconds of this process's threads that are not Python threads."""
        python = {t.native_id for t in threading.enumerate()}
        total = 0
        for tid in os.listdir("/proc/self/task"):
            if int(tid) in python:
                continue
            try:
                stat = Path(f"/proc/self/task/{tid}/stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
        return total / tick

    class Probe(prometheus_client.registry.Collector):
        def collect(self) -> Iterator[Any]:
            with lock:
                snapshot = dict(totals)
                ran = ",".join(sorted(runtimes))
            native = native_cpu()
            yield CounterMetricFamily(
                "elephant_bench_model_cpu_seconds",
                "CPU in the encoders' pool: the calling threads' plus the native threads'.",
                value=snapshot["caller_cpu"] + native,
            )
            yield CounterMetricFamily(
                "elephant_bench_native_thread_cpu_seconds",
                "CPU of threads that are not Python threads.",
                value=native,
            )
            yield CounterMetricFamily(
                "elephant_bench_model_busy_seconds",
                "Wall time in the encoders' pool.",
                value=snapshot["busy"],
            )
            yield CounterMetricFamily(
                "elephant_bench_model_calls", "Calls of pool.", value=snapshot["calls"]
            )
            yield CounterMetricFamily(
                "elephant_bench_model_texts", "Texts the model read.", value=snapshot["texts"]
            )
            yield CounterMetricFamily(
                "elephant_bench_pooled_window_commits",
                "Commits whose window vectors were pooled from the turns.",
                value=snapshot["pooled_windows"],
            )
            info = GaugeMetricFamily(
                "elephant_bench_runtime", "Encoder runtimes used.", labels=["runtime"]
            )
            info.add_metric([ran or "none"], 1)
            yield info

    metrics.REGISTRY.register(Probe())
    from app.cli import main

    main(["serve", "--auth", "local"])


@contextmanager
def probed_server(data_dir: Path, env: dict[str, str] | None) -> Iterator[common.Server]:
    port = common.free_port()
    # a configuration of --compare stands alone; a single run takes the environment's
    environ = {k: v for k, v in os.environ.items() if env is None or k not in CONFIG_KEYS}
    environ.update(
        {
            "ELEPHANT_DATA_DIR": str(data_dir),
            "ELEPHANT_SERVER_PORT": str(port),
            "ELEPHANT_LOG_LEVEL": "WARNING",
            "ELEPHANT_METRICS_PUBLIC": "true",
            **(env or {}),
        }
    )
    log_path = data_dir / "serve.log"
    with log_path.open("a") as log_file:
        proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--serve"],
            env=environ,
            stdout=log_file,
            stderr=log_file,
        )
    server = common.Server(proc, f"http://127.0.0.1:{port}", log_path)
    try:
        common.wait_healthy(server.url)
        yield server
    finally:
        common.stop(server)


def scrape(url: str) -> dict[str, float]:
    """The numbers of /metrics this benchmark reads, by sample name and labels."""
    from prometheus_client.parser import text_string_to_metric_families

    wanted = ("elephant_embedding_seconds", "elephant_embedded_texts", "elephant_bench_")
    text = httpx.get(f"{url}/metrics", timeout=30).text
    values: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if not sample.name.startswith(wanted) or sample.name.endswith("_created"):
                continue
            if sample.name.endswith("_bucket"):
                continue
            labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
            values[f"{sample.name}{{{labels}}}" if labels else sample.name] = sample.value
    return values


def postgres_processes(data_dir: Path) -> list[psutil.Process]:
    """The embedded postmaster of ``data_dir`` and its children."""
    for pid_file in data_dir.rglob("postmaster.pid"):
        try:
            postmaster = psutil.Process(int(pid_file.read_text().split()[0]))
            return [postmaster, *postmaster.children(recursive=True)]
        except (OSError, ValueError, IndexError, psutil.Error):
            continue
    return []


def cpu_seconds(processes: list[psutil.Process]) -> dict[int, float]:
    seconds: dict[int, float] = {}
    for process in processes:
        try:
            times = process.cpu_times()
            seconds[process.pid] = times.user + times.system
        except psutil.Error:
            continue
    return seconds


# ---------------------------------------------------------------- clients


def query(rng: random.Random, seen: set[str], lock: threading.Lock) -> str:
    """A question about the notes' world that no reader has asked before in this round."""
    while True:
        place, month, year = rng.choice(PLACES), rng.choice(MONTHS), rng.randint(2019, 2025)
        if rng.random() < 0.5:
            text = f"Who {rng.choice(VERBS)} the {rng.choice(THINGS)} in {place} in {month} {year}?"
        else:
            text = (
                f"What did {rng.choice(PEOPLE)} do with the {rng.choice(THINGS)} in {place} "
                f"in {month} {year}?"
            )
        with lock:
            if text not in seen:
                seen.add(text)
                return text


def conversation(rng: random.Random, ref: int) -> dict[str, Any]:
    """A 10-turn conversation whose every turn differs from every other turn committed."""
    a, b = rng.sample(PEOPLE, 2)
    turns = []
    for i in range(TURNS):
        text = (
            f"I {rng.choice(VERBS)} the {rng.choice(THINGS)} in {rng.choice(PLACES)} on "
            f"{rng.randint(1, 28)} {rng.choice(MONTHS)} {rng.randint(2019, 2025)}; "
            f"the ticket number was {ref}-{i}-{rng.randint(1000, 9999)}."
        )
        turns.append({"speaker": (a, b)[i % 2], "text": text})
    return {"turns": turns, "session_date": f"{rng.randint(2019, 2025)}-05-08T13:56:00Z"}


def writer(url: str, seed: int, stop: threading.Event, out: dict[str, Any]) -> None:
    rng = random.Random(seed)
    with httpx.Client(base_url=url, timeout=120) as client:
        n = 0
        while not stop.is_set():
            n += 1
            started = time.perf_counter()
            try:
                response = client.post("/commit", json={"text": note(rng, seed * 100000 + n)})
            except httpx.HTTPError as exc:
                out["errors"][type(exc).__name__] += 1
                continue
            out["commit"].append(time.perf_counter() - started)
            out["status"][f"commit {response.status_code}"] += 1
            if response.status_code == 201:
                out["acknowledged"].append(response.json()["memory_id"])


def conversation_writer(url: str, seed: int, stop: threading.Event, out: dict[str, Any]) -> None:
    rng = random.Random(seed)
    with httpx.Client(base_url=url, timeout=120) as client:
        n = 0
        while not stop.is_set():
            n += 1
            started = time.perf_counter()
            try:
                response = client.post(
                    "/commit_conversation", json=conversation(rng, seed * 100000 + n)
                )
            except httpx.HTTPError as exc:
                out["errors"][type(exc).__name__] += 1
                continue
            out["conversation"].append(time.perf_counter() - started)
            out["status"][f"conversation {response.status_code}"] += 1
            if response.status_code in (200, 201):
                body = response.json()
                out["conversations"].append((body["conversation_id"], int(body["turns"])))
                out["windows"].extend(
                    item["memory_id"]
                    for item in body["windows"]["items"]
                    if item["status"] == "stored"
                )


def reader(url: str, seed: int, stop: threading.Event, out: dict[str, Any], seen: set[str]) -> None:
    rng = random.Random(seed)
    with httpx.Client(base_url=url, timeout=120) as client:
        while not stop.is_set():
            text = query(rng, seen, out["lock"])
            started = time.perf_counter()
            try:
                response = client.get("/search", params={"q": text, "limit": 10})
            except httpx.HTTPError as exc:
                out["errors"][type(exc).__name__] += 1
                continue
            out["search"].append(time.perf_counter() - started)
            out["status"][f"search {response.status_code}"] += 1


def present(
    data_dir: Path, ids: list[str], conversations: list[str], windows: list[str]
) -> dict[str, int]:
    """How many of the acknowledged notes, conversation turns and stored windows are there."""
    db = Database(Settings.model_validate({"data_dir": str(data_dir)}))
    db.open()
    try:
        with db.tenant("default") as conn:

            def count(sql: str, values: list[str]) -> int:
                row = conn.execute(sql, (values,)).fetchone()
                return int(row[0]) if row else 0

            return {
                "notes": count("SELECT count(*) FROM memories WHERE id = ANY(%s::uuid[])", ids),
                "turns": count(
                    "SELECT count(*) FROM turns WHERE conversation_id = ANY(%s::uuid[])",
                    conversations,
                ),
                "windows": count(
                    "SELECT count(*) FROM memories WHERE id = ANY(%s::uuid[])", windows
                ),
            }
    finally:
        db.close()


# ---------------------------------------------------------------- one round


def warm_up(url: str) -> float:
    """Seconds until a search, a commit and a conversation have been answered."""
    started = time.monotonic()
    rng = random.Random(0)
    with httpx.Client(base_url=url, timeout=300) as client:
        client.get("/search", params={"q": "warm up the model", "limit": 1}).raise_for_status()
        client.post("/commit", json={"text": note(rng, 0)}).raise_for_status()
        client.post("/commit_conversation", json=conversation(rng, 0)).raise_for_status()
    return round(time.monotonic() - started, 2)


def writer_kinds(clients: int, mix: str) -> list[str]:
    if mix == "notes":
        return ["note"] * clients
    if mix == "conversations":
        return ["conversation"] * clients
    return ["note" if i % 2 == 0 else "conversation" for i in range(clients)]


def run(
    clients: int, seconds: float, mix: str = "notes", env: dict[str, str] | None = None
) -> tuple[dict[str, Any], dict[str, list[float]]]:
    """One server, one round (``env``: its configuration, None: this environment's);
    returns the summary and the raw latencies."""
    with tempfile.TemporaryDirectory(prefix="elephant-load-") as tmp:
        data_dir = Path(tmp)
        out: dict[str, Any] = {
            "commit": [], "conversation": [], "search": [], "acknowledged": [],
            "conversations": [], "windows": [], "status": Counter(), "errors": Counter(),
            "lock": threading.Lock(),
        }  # fmt: skip
        seen: set[str] = set()
        load_start = load_average()
        with probed_server(data_dir, env) as server:
            process = psutil.Process(server.proc.pid)
            warm_s = warm_up(server.url)
            rss_before = process.memory_info().rss
            metrics_before = scrape(server.url)
            pg = postgres_processes(data_dir)
            cpu_before = cpu_seconds([process, *pg])
            stop_event = threading.Event()
            kinds = writer_kinds(clients, mix)
            threads = [
                threading.Thread(
                    target=writer if kind == "note" else conversation_writer,
                    args=(server.url, i + 1, stop_event, out),
                )
                for i, kind in enumerate(kinds)
            ] + [
                threading.Thread(target=reader, args=(server.url, i + 1, stop_event, out, seen))
                for i in range(clients)
            ]
            started = time.monotonic()
            for thread in threads:
                thread.start()
            time.sleep(seconds)
            stop_event.set()
            for thread in threads:
                thread.join(timeout=300)
            elapsed = time.monotonic() - started
            pg_after = postgres_processes(data_dir)
            cpu_after = cpu_seconds([process, *pg_after])
            metrics_after = scrape(server.url)
            rss_after = process.memory_info().rss
        load_end = load_average()
        ids = out["acknowledged"]
        conversation_ids = [cid for cid, _ in out["conversations"]]
        found = present(data_dir, ids, conversation_ids, out["windows"])

    def delta(name: str) -> float:
        return metrics_after.get(name, 0.0) - metrics_before.get(name, 0.0)

    server_cpu = cpu_after.get(process.pid, 0.0) - cpu_before.get(process.pid, 0.0)
    pg_cpu = sum(v - cpu_before.get(pid, 0.0) for pid, v in cpu_after.items() if pid != process.pid)
    model_cpu = delta("elephant_bench_model_cpu_seconds_total")
    wait = {
        kind: round(delta(f"elephant_embedding_seconds_sum{{kind={kind}}}"), 2)
        for kind in ("document", "query")
    }
    texts = {
        kind: int(delta(f"elephant_embedded_texts_total{{kind={kind}}}"))
        for kind in ("document", "query")
    }
    busy = server_cpu + pg_cpu
    turns = sum(n for _, n in out["conversations"])
    rate = len(out["commit"]) / elapsed
    summary = {
        "env": {k: (os.environ if env is None else env).get(k, "default") for k in CONFIG_KEYS},
        "runtime_used": next(
            (k.split("runtime=")[1].rstrip("}") for k in metrics_after if "bench_runtime{" in k),
            "?",
        ),
        "pooled_window_commits": int(delta("elephant_bench_pooled_window_commits_total")),
        "clients": {"writers": Counter(kinds), "readers": clients},
        "seconds": round(elapsed, 1),
        "warm_up_s": warm_s,
        "commit": {**percentiles(out["commit"]), "per_s": round(rate, 2)},
        "conversation": {
            **percentiles(out["conversation"]),
            "per_s": round(len(out["conversation"]) / elapsed, 2),
            "turns_per_s": round(turns / elapsed, 1),
        },
        "search": {
            **percentiles(out["search"]),
            "per_s": round(len(out["search"]) / elapsed, 2),
        },
        "status": dict(out["status"]),
        "errors": dict(out["errors"]),
        "failed_requests": failed(out["status"], out["errors"]),
        "rss_mb": {"before": rss_before // 2**20, "after": rss_after // 2**20},
        "acknowledged": len(ids),
        "acknowledged_present": found["notes"],
        "acknowledged_turns": turns,
        "acknowledged_turns_present": found["turns"],
        "stored_windows": len(out["windows"]),
        "stored_windows_present": found["windows"],
        "cpu": {
            "cores": CORES,
            "server_s": round(server_cpu, 1),
            "postgres_s": round(pg_cpu, 1),
            "model_s": round(model_cpu, 1),
            "model_busy_wall_s": round(delta("elephant_bench_model_busy_seconds_total"), 1),
            "model_share_of_busy": round(model_cpu / busy, 3) if busy else None,
            "model_share_of_machine": round(model_cpu / (elapsed * CORES), 3),
            "busy_share_of_machine": round(busy / (elapsed * CORES), 3),
        },
        "model_texts": int(delta("elephant_bench_model_texts_total")),
        "embedded_texts": texts,
        "embedding_wait_s": wait,
        "load_average": {"start": load_start, "end": load_end},
    }
    raw = {name: out[name] for name in ("commit", "conversation", "search")}
    return summary, raw


def failed(status: Counter[str], errors: Counter[str]) -> int:
    bad = sum(n for key, n in status.items() if not key.endswith((" 200", " 201")))
    return bad + sum(errors.values())


def print_round(label: str, r: dict[str, Any]) -> None:
    head = f"[{label}] " if label else ""
    print(
        f"{head}runtime {r['runtime_used']}, window vectors "
        f"{r['env']['ELEPHANT_EMBEDDING_WINDOW_VECTORS']} (pooled in "
        f"{r['pooled_window_commits']} commits), {r['seconds']} s "
        f"(warm-up {r['warm_up_s']} s), load average {r['load_average']['start']} -> "
        f"{r['load_average']['end']}"
    )
    for op in ("commit", "conversation", "search"):
        x = r[op]
        if not x["n"]:
            continue
        extra = f"  {x['turns_per_s']:.1f} turns/s" if op == "conversation" else ""
        print(
            f"  {op:12} {x['per_s']:6.2f}/s  p50 {x['p50_ms']:7.1f} ms  "
            f"p95 {x['p95_ms']:7.1f} ms  p99 {x['p99_ms']:7.1f} ms  n={x['n']}{extra}"
        )
    cpu = r["cpu"]
    print(
        f"  status {r['status']}  errors {r['errors']}  server RSS {r['rss_mb']['before']} -> "
        f"{r['rss_mb']['after']} MB"
    )
    print(
        f"  acknowledged notes {r['acknowledged']}, present {r['acknowledged_present']}; "
        f"turns {r['acknowledged_turns']}, present {r['acknowledged_turns_present']}; "
        f"stored windows {r['stored_windows']}, present {r['stored_windows_present']}"
    )
    print(
        f"  CPU s: server {cpu['server_s']}, postgres {cpu['postgres_s']}, model "
        f"{cpu['model_s']} = {pct(cpu['model_share_of_busy'])} of the busy CPU, "
        f"{pct(cpu['model_share_of_machine'])} of {cpu['cores']} cores x wall; model texts "
        f"{r['model_texts']}, embedding wait s {r['embedding_wait_s']}"
    )


def pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.0f} %"


# ---------------------------------------------------------------- compare


def aggregate(rounds: list[tuple[dict[str, Any], dict[str, list[float]]]]) -> dict[str, Any]:
    """One configuration over its rounds: rates over the summed time, latencies pooled."""
    seconds = sum(r["seconds"] for r, _ in rounds)

    def total(key: str) -> int:
        return sum(int(r[key]) for r, _ in rounds)

    def cpu(key: str) -> float:
        return float(sum(r["cpu"][key] for r, _ in rounds))

    busy = cpu("server_s") + cpu("postgres_s")
    result: dict[str, Any] = {"rounds": len(rounds), "seconds": round(seconds, 1)}
    for op in ("commit", "conversation", "search"):
        samples = [x for _, raw in rounds for x in raw[op]]
        result[op] = {**percentiles(samples), "per_s": round(len(samples) / seconds, 2)}
    turns = total("acknowledged_turns")
    result["conversation"]["turns_per_s"] = round(turns / seconds, 1)
    result["failed_requests"] = total("failed_requests")
    for key in ("acknowledged", "acknowledged_present", "acknowledged_turns"):
        result[key] = total(key)
    result["acknowledged_turns_present"] = total("acknowledged_turns_present")
    result["stored_windows"] = total("stored_windows")
    result["stored_windows_present"] = total("stored_windows_present")
    result["cpu"] = {
        "server_s": round(cpu("server_s"), 1),
        "postgres_s": round(cpu("postgres_s"), 1),
        "model_s": round(cpu("model_s"), 1),
        "model_share_of_busy": round(cpu("model_s") / busy, 3) if busy else None,
        "model_share_of_machine": round(cpu("model_s") / (seconds * CORES), 3),
        "busy_share_of_machine": round(busy / (seconds * CORES), 3),
    }
    result["model_texts_per_s"] = round(sum(r["model_texts"] for r, _ in rounds) / seconds, 1)
    result["warm_up_s"] = [r["warm_up_s"] for r, _ in rounds]
    result["rss_mb_after"] = [r["rss_mb"]["after"] for r, _ in rounds]
    result["load_average_1m"] = [
        x for r, _ in rounds for x in (r["load_average"]["start"][0], r["load_average"]["end"][0])
    ]
    return result


ROWS: list[tuple[str, Callable[[dict[str, Any]], float | None], str]] = [
    ("commits/s (POST /commit)", lambda a: a["commit"]["per_s"], "{:.2f}"),
    ("commit p50 ms", lambda a: a["commit"].get("p50_ms"), "{:.0f}"),
    ("commit p95 ms", lambda a: a["commit"].get("p95_ms"), "{:.0f}"),
    ("conversations/s (10 turns)", lambda a: a["conversation"]["per_s"], "{:.2f}"),
    ("turns/s", lambda a: a["conversation"]["turns_per_s"], "{:.1f}"),
    ("conversation p50 ms", lambda a: a["conversation"].get("p50_ms"), "{:.0f}"),
    ("conversation p95 ms", lambda a: a["conversation"].get("p95_ms"), "{:.0f}"),
    ("searches/s", lambda a: a["search"]["per_s"], "{:.2f}"),
    ("search p50 ms", lambda a: a["search"].get("p50_ms"), "{:.0f}"),
    ("search p95 ms", lambda a: a["search"].get("p95_ms"), "{:.0f}"),
    ("texts through the model/s", lambda a: a["model_texts_per_s"], "{:.1f}"),
    ("model share of busy CPU", lambda a: a["cpu"]["model_share_of_busy"], "{:.1%}"),
    ("model share of cores x wall", lambda a: a["cpu"]["model_share_of_machine"], "{:.1%}"),
    ("busy share of cores x wall", lambda a: a["cpu"]["busy_share_of_machine"], "{:.1%}"),
    ("failed requests", lambda a: a["failed_requests"], "{:.0f}"),
]


def table(before: dict[str, Any], after: dict[str, Any]) -> str:
    lines = ["| | before (torch, model) | after (onnx, pooled) | after / before |"]
    lines.append("| --- | ---: | ---: | ---: |")
    for name, get, fmt in ROWS:
        b, a = get(before), get(after)
        ratio = f"{a / b:.2f}x" if a is not None and b else "-"
        shown = [fmt.format(x) if x is not None else "-" for x in (b, a)]
        lines.append(f"| {name} | {shown[0]} | {shown[1]} | {ratio} |")
    for label, agg in (("before", before), ("after", after)):
        lines.append(
            f"| acknowledged present ({label}) | notes {agg['acknowledged_present']}/"
            f"{agg['acknowledged']}, turns {agg['acknowledged_turns_present']}/"
            f"{agg['acknowledged_turns']}, windows {agg['stored_windows_present']}/"
            f"{agg['stored_windows']} | | |"
        )
    return "\n".join(lines)


def ratio(before: float | None, after: float | None) -> float | None:
    return round(after / before, 3) if before and after is not None else None


def compare(clients: int, seconds: float, rounds: int, mix: str) -> dict[str, Any]:
    configs = {"before": BEFORE, "after": AFTER}
    order: list[str] = []
    for r in range(rounds):
        order += ["before", "after"] if r % 2 == 0 else ["after", "before"]
    results: dict[str, list[tuple[dict[str, Any], dict[str, list[float]]]]] = {
        "before": [],
        "after": [],
    }
    print(f"{len(order)} rounds of {seconds:g} s: {', '.join(order)}; {CORES} cores")
    for i, label in enumerate(order, 1):
        summary, raw = run(clients, seconds, mix, configs[label])
        summary["order"] = i
        results[label].append((summary, raw))
        print_round(f"{i}/{len(order)} {label}", summary)
        sys.stdout.flush()
    before, after = aggregate(results["before"]), aggregate(results["after"])
    markdown = table(before, after)
    loads = before["load_average_1m"] + after["load_average_1m"]
    print()
    print(markdown)
    print(f"\nload average (1 min) over the rounds: {min(loads):.2f}-{max(loads):.2f}")
    return {
        "compare": True,
        "order": order,
        "mix": mix,
        "configs": {"before": BEFORE, "after": AFTER or "defaults"},
        "before": before,
        "after": after,
        "ratios": {name: ratio(get(before), get(after)) for name, get, _ in ROWS},
        "rounds": {label: [s for s, _ in rs] for label, rs in results.items()},
        "table": markdown,
    }


def check(results: list[dict[str, Any]]) -> None:
    for r in results:
        if (
            r["acknowledged"] != r["acknowledged_present"]
            or r["acknowledged_turns"] != r["acknowledged_turns_present"]
            or r["stored_windows"] != r["stored_windows_present"]
        ):
            raise SystemExit("acknowledged writes are missing")


def main() -> None:
    if sys.argv[1:2] == ["--serve"]:  # the server of a round (probed_server)
        serve_probed()
        return
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=8, help="writers, and as many readers")
    parser.add_argument("--seconds", type=float, default=None, help="per round (60; 30 compare)")
    parser.add_argument(
        "--compare", action="store_true", help="before (torch, model) vs after, interleaved"
    )
    parser.add_argument("--rounds", type=int, default=2, help="--compare: rounds of each")
    parser.add_argument(
        "--mix",
        choices=["notes", "conversations", "both"],
        default=None,
        help="what writers commit: notes, 10-turn conversations, or half each "
        "(default: notes; both with --compare)",
    )
    parser.add_argument("--smoke", action="store_true", help="2+2 clients for 3 s, 1 round each")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/load.json"))
    args = parser.parse_args()
    seconds = args.seconds or (30.0 if args.compare else 60.0)
    clients, rounds = (2, 1) if args.smoke else (args.clients, args.rounds)
    if args.smoke:
        seconds = 3.0
    mix = args.mix or ("both" if args.compare else "notes")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.compare:
        report = compare(clients, seconds, rounds, mix)
        args.out.write_text(json.dumps({"smoke": args.smoke, **report}, indent=2, default=str))
        check(report["rounds"]["before"] + report["rounds"]["after"])
        return
    result, _ = run(clients, seconds, mix)
    print_round("", result)
    args.out.write_text(json.dumps({"smoke": args.smoke, "mix": mix, **result}, indent=2))
    check([result])


if __name__ == "__main__":
    main()
