"""One version for the server and its client: both distributions are released together."""

import re
from pathlib import Path

import elephant_client
from app import __version__

ROOT = Path(__file__).resolve().parents[2]


def test_the_client_carries_the_servers_version() -> None:
    assert elephant_client.__version__ == __version__


def test_the_changelog_names_the_version() -> None:
    """The version in app/__init__.py is the one place: the changelog's newest release
    heading (or Unreleased above it) names it."""
    headings = re.findall(r"^## \[?([^\]\s]+)", (ROOT / "CHANGELOG.md").read_text(), re.MULTILINE)
    released = [h for h in headings if h.lower() != "unreleased"]
    assert released, "CHANGELOG.md has no release heading"
    assert released[0] == __version__, (released[0], __version__)
