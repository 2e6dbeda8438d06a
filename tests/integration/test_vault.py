"""The Markdown vault export: its layout, front matter, links that resolve, and file names
that no entity name can turn into a path outside the vault."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from app.cli import main
from app.config import Settings
from app.errors import InvalidInput
from app.services.runtime import Elephant
from app.services.transfer.vault import Names, export_vault, link, safe_stem
from tests.conftest import MANAGED
from tests.integration.test_export import Client, call, client, planted  # noqa: F401  (fixtures)

HOSTILE = ["../x", "a/b", "A\\B", "..", ".hidden", "CON", "x|y]] [[z", "Résumé: #1?", "a_b"]
LINK = re.compile(r"(?<!\\)\[\[([^\]|]+)(?:\|[^\]]*)?\]\]")


@pytest.fixture(scope="module")
def vault(
    planted: str,  # noqa: F811
    client: Client,  # noqa: F811
    elephant: Elephant,
    tmp_path_factory: pytest.TempPathFactory,
) -> Path:
    """The planted tenant plus entities with hostile names, linked to each other."""
    entities = [{"name": name, "entity_type": "thing"} for name in HOSTILE]
    relations = [
        {"source": HOSTILE[i], "relation_type": "related_to", "target": HOSTILE[i + 1]}
        for i in range(len(HOSTILE) - 1)
    ]
    call(client, "POST", "/graph/record", planted, {"entities": entities, "relations": relations})
    directory = tmp_path_factory.mktemp("vault") / "out"
    report = export_vault(elephant, planted, directory)
    assert report.entities >= len(HOSTILE) + 3 and report.conversations >= 1
    return directory


def front_matter(path: Path) -> dict[str, str]:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n"), path
    block = text[4 : text.index("\n---\n", 4)]
    return dict(line.split(": ", 1) for line in block.splitlines())


def test_layout_and_front_matter(vault: Path) -> None:
    files = sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*") if p.is_file())
    assert "index.md" in files and "Notes.md" in files
    assert any(f.startswith("Conversations/2023-05-08 harbour-1") for f in files), files
    assert "Entities/Reefwatch.md" in files and "Entities/Ines Duarte.md" in files
    assert all(f.endswith(".md") for f in files)
    ines = front_matter(vault / "Entities" / "Ines Duarte.md")
    assert ines["type"] == '"entity"' and ines["role"] == '"person"'
    body = (vault / "Entities" / "Ines Duarte.md").read_text(encoding="utf-8")
    assert "works_at [[Reefwatch]]" in body
    assert "~~lives_in [[Faro]]~~" in body, "a closed relation is shown struck through"
    assert "Prefers tea" in body and "## Observations" in body
    conversation = next((vault / "Conversations").glob("2023-05-08 harbour-1*.md"))
    text = conversation.read_text(encoding="utf-8")
    assert "**Ines** · 2023-05-08" in text and "I finished the harbour survey" in text
    assert front_matter(conversation)["external_id"] == '"harbour-1"'
    notes = (vault / "Notes.md").read_text(encoding="utf-8")
    assert "Ines lives in Lisbon" in notes and "## 2021-03-01" in notes


def test_every_link_resolves_to_one_file(vault: Path) -> None:
    stems: dict[str, list[Path]] = {}
    for path in vault.rglob("*.md"):
        stems.setdefault(path.stem.casefold(), []).append(path)
    assert all(len(paths) == 1 for paths in stems.values()), "two files share a name"
    links = 0
    for path in vault.rglob("*.md"):
        for target in LINK.findall(path.read_text(encoding="utf-8")):
            links += 1
            assert target.casefold() in stems, f"{path.name} links to missing [[{target}]]"
    assert links > len(HOSTILE)


def test_hostile_names_stay_inside_the_vault(vault: Path) -> None:
    inside = {p.resolve() for p in vault.rglob("*")}
    assert all(str(p).startswith(str(vault.resolve())) for p in inside)
    assert not (vault.parent / "x.md").exists() and not (vault / "x.md").exists()
    names = sorted(p.name for p in (vault / "Entities").iterdir())
    assert not any(name.startswith(".") for name in names), names
    for name in HOSTILE:
        stem = safe_stem(name)
        assert "/" not in stem and "\\" not in stem and not stem.startswith(".")
    collided = [n for n in names if n.casefold().startswith(("a_b", "a_b ("))]
    assert len(collided) == 3, names  # a/b, A\B and a_b: three files, three names
    dotted = front_matter(vault / "Entities" / "_x.md")
    assert dotted["name"] == '"../x"', "the entity named ../x is the file _x.md"


def test_safe_stem_and_names() -> None:
    assert safe_stem("../../etc/passwd") == "_.._etc_passwd"
    assert safe_stem("a\x00b") == "a_b"
    assert safe_stem("..") == "untitled" and safe_stem("   ") == "untitled"
    assert safe_stem("con.txt") == "_con.txt"
    assert len(safe_stem("é" * 500).encode()) <= 150
    names = Names()
    assert [names.claim(n) for n in ("Index", "a/b", "A:B", "a_b")] == [
        "Index (2)", "a_b", "A_B (2)", "a_b (3)",
    ]  # fmt: skip
    assert link(safe_stem("x|y]] [[z"), "x|y]] [[z") == "[[x_y__ __z|x y z]]"
    assert link("Reefwatch", "Reefwatch") == "[[Reefwatch]]"
    assert link("a_b", "a/b") == "[[a_b|a/b]]"


def test_vault_refuses_a_folder_with_files(
    elephant: Elephant,
    planted: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    (tmp_path / "keep.md").write_text("mine", encoding="utf-8")
    with pytest.raises(InvalidInput, match="not an empty folder"):
        export_vault(elephant, planted, tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["keep.md"]


def test_cli_vault(planted: str, settings: Settings, tmp_path: Path) -> None:  # noqa: F811
    env = {
        "ELEPHANT_DATA_DIR": str(settings.data_dir),
        "ELEPHANT_EMBEDDED_DATABASE": settings.embedded.database,
    }
    if MANAGED:
        env["ELEPHANT_DATABASE_OPTIONAL_EXTENSIONS"] = "none"
    out = tmp_path / "vault"
    args = ["export", "--tenant", planted, "--format", "vault", "--dir", str(out)]
    result = CliRunner().invoke(main, args, env=env)
    assert result.exit_code == 0, result.output
    assert (out / "index.md").exists() and "files for tenant" in result.stderr
    missing = CliRunner().invoke(
        main, ["export", "--tenant", planted, "--format", "vault"], env=env
    )
    assert missing.exit_code == 1 and "--dir" in missing.output
