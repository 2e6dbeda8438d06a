"""The settings reference table, generated from the models so it cannot drift.

``elephant config reference`` prints it, and a test compares it with the table in the
documentation: one row per key, in the order of the models' fields, with its
environment names (aliases included), its default and its description.
"""

from __future__ import annotations

from app.config.settings import ENV_ALIASES, iter_keys


def reference_markdown() -> str:
    """The configuration reference table, generated so it cannot drift."""
    rows = ["| key | environment | default | meaning |", "| --- | --- | --- | --- |"]
    for dotted, env, default, description, _ in iter_keys():
        if dotted == "data_dir":
            shown = "user data dir"
        elif default is None:
            shown = "unset"
        elif isinstance(default, bool):
            shown = f"`{str(default).lower()}`"
        else:
            shown = f"`{default}`"
        aliases = [alias for alias, target in ENV_ALIASES.items() if target == dotted]
        env_names = ", ".join(f"`{name}`" for name in [env, *aliases])
        rows.append(f"| `{dotted}` | {env_names} | {shown} | {description} |")
    return "\n".join(rows)
