"""What the MCP tool definitions cost an agent's context, per profile.

    .venv/bin/python benchmarks/mcp_tokens.py [--smoke] [--out benchmarks/results/mcp_tokens.json]

Lists the tools of each profile through fastmcp's in-process client (exactly what
a client receives from tools/list), serialises each tool's name, description,
inputSchema and annotations as compact JSON, and estimates tokens as
characters / 4. No tokenizer of the client models is available offline; chars/4
is the usual rule of thumb for English and JSON (real tokenizers land within
about 20 % of it). Needs no database: listing tools never touches the runtime.
The whole run takes seconds, so `--smoke` is the same run, flagged as a smoke run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

from fastmcp import Client

from app.config import Settings
from app.mcp.registry import PROFILE_NAMES, Profile
from app.mcp.server import build_server
from app.services.runtime import Elephant

FIELDS = ("name", "description", "inputSchema", "annotations")


def _no_runtime() -> Elephant:
    raise RuntimeError("listing tools needs no runtime")


async def definitions(profile: Profile) -> list[dict[str, Any]]:
    server = build_server(Settings(), _no_runtime, profile=profile)
    async with Client(server) as client:
        tools = await client.list_tools()
    listed = []
    for tool in tools:
        wire = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
        listed.append({key: wire[key] for key in FIELDS if key in wire})
    return listed


def measure(profile: Profile) -> dict[str, Any]:
    tools = asyncio.run(definitions(profile))
    per_tool = {
        tool["name"]: len(json.dumps(tool, separators=(",", ":"), ensure_ascii=False))
        for tool in tools
    }
    chars = len(json.dumps(tools, separators=(",", ":"), ensure_ascii=False))
    return {
        "tools": len(tools),
        "names": list(per_tool),
        "chars": chars,
        "tokens_estimate": round(chars / 4),
        "per_tool_tokens_estimate": {name: round(size / 4) for name, size in per_tool.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="the same run (it takes seconds)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/mcp_tokens.json"))
    args = parser.parse_args()
    results = {profile: measure(profile) for profile in PROFILE_NAMES}
    print(f"{'profile':<10} {'tools':>5} {'chars':>7} {'~tokens':>8}  tools")
    for profile, row in results.items():
        print(
            f"{profile:<10} {row['tools']:>5} {row['chars']:>7} {row['tokens_estimate']:>8}  "
            + ", ".join(row["names"])
        )
    print("per tool (~tokens):", json.dumps(results["full"]["per_tool_tokens_estimate"]))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "smoke": args.smoke,
        "method": "compact JSON of name, description, inputSchema, annotations; chars/4",
    }
    args.out.write_text(json.dumps({**payload, "profiles": results}, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
