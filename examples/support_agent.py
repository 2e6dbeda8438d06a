"""A support agent that remembers a customer across sessions, through Elephant.

    .venv/bin/python examples/support_agent.py

Four sessions with one customer, each served by a NEW agent instance that keeps nothing
in process: whatever it knows of the customer comes from Elephant (elephant_client).

1. The customer gives her plan, her address and a preference; at the end of the session
   the conversation is committed and the server extracts its facts (``wait=True``).
2. A new agent searches memory before answering, and its reply uses what it found.
3. The customer has moved. Committing that session makes the server's contradiction
   detection close the old address in time: the contradiction, the fact's history and
   the facts as of an earlier date show the old value kept as history, the new one current.
4. A new agent recalls the new address only.

The script ends with checks and exits 1 when one fails.

Offline by default: the agent's "model" is a scripted stand-in that answers from the
memory in its prompt with a few rules; no key, no network. With ANTHROPIC_API_KEY set the
agent's replies come from Claude (``ANTHROPIC_MODEL``, default claude-haiku-4-5). The
server's fact extraction and contradiction detection stay whatever the server runs
(offline rules unless it is configured with ``ELEPHANT_LLM_PROVIDER=anthropic``).

The server: ELEPHANT_URL (and ELEPHANT_API_KEY) if set, else a throwaway ``elephant
serve`` started for the run (examples/_server.py).
"""

from __future__ import annotations

import os
import re
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field

from _server import elephant_server

from elephant_client import (
    ChainLink,
    Contradiction,
    ContradictionSide,
    Elephant,
    FactHistory,
    SearchFilters,
    Turn,
)

CUSTOMER = "Dana Reyes"
AGENT = "assistant"  # the server reads this speaker's turns as the assistant's
SOURCE = "support"
OLD_ADDRESS, NEW_ADDRESS = "14 Harbour Street", "9 Rua Augusta"
BEFORE_THE_MOVE = "2025-04-01T00:00:00Z"

# What the customer says, session by session (the agent's lines come from its model).
SESSIONS: list[tuple[str, str, list[str]]] = [
    (
        "2025-03-04T10:00:00Z",
        "a new customer",
        [
            "Hi, I'm Dana. I'm on the Pro plan.",
            "My invoices keep going to the wrong place. I live at 14 Harbour Street in Lisbon.",
            "I prefer email over phone calls, please.",
        ],
    ),
    ("2025-03-18T09:30:00Z", "two weeks later", ["My router died. Can you send a replacement?"]),
    (
        "2025-06-20T16:00:00Z",
        "she moved",
        ["Hi again! I moved to 9 Rua Augusta in Porto last week."],
    ),
    ("2025-06-23T11:00:00Z", "after the move", ["Can you send me a new SIM card?"]),
]

# ------------------------------------------------------------------ the model

Model = Callable[[str, list[dict[str, str]]], str]  # (system prompt, messages) -> reply
CLAUDE = os.environ.get("ANTHROPIC_MODEL", "claude-haiku-4-5")

SYSTEM = (
    "You are a support agent for an internet provider. Answer the customer in one or two "
    "sentences. Use what memory says about the customer (the dated lines below, newest "
    "facts win) and say which address or plan you rely on.\n\nMemory:\n{memory}"
)

_RESIDENCE = re.compile(
    r"\b(?:lives at|lives in|moved to|relocated to)\s+(?P<place>.+?)"
    r"(?:\s+(?:during|on|since|in (?:early |late )?[A-Z][a-z]+ \d{4})\b.*)?$"
)
_PLAN = re.compile(r"\bon the (?P<plan>[A-Z][\w-]*) plan\b")
_CHANNEL = re.compile(r"\bprefers (?P<channel>email|phone|text|chat)")


def scripted_model(system: str, messages: list[dict[str, str]]) -> str:
    """A deterministic stand-in for an LLM: reads the memory lines of its prompt (newest
    last) and answers with a few rules."""
    memory = system.split("Memory:\n", 1)[-1].splitlines()
    message = messages[-1]["content"]

    def last(pattern: re.Pattern[str], group: str) -> str | None:
        found = [m[group] for line in memory if (m := pattern.search(line.rstrip(".")))]
        return found[-1] if found else None

    address, plan, channel = (
        last(_RESIDENCE, "place"),
        last(_PLAN, "plan"),
        last(_CHANNEL, "channel"),
    )
    if moved := _RESIDENCE.search(message.rstrip(".").replace(" last week", "")):
        before = f" instead of {address}" if address else ""
        return f"Thanks for telling us: we'll use {moved['place']} from now on{before}."
    if re.search(r"\b(send|ship)\b", message):
        if address is None:
            return "Sure, where should we send it?"
        terms = f"You're on the {plan} plan, so it's free: " if plan else ""
        confirm = f" and confirm by {channel}" if channel else ""
        return f"{terms}I'll ship it to {address}{confirm}."
    return "Got it, thanks. Anything else?"


def claude_model() -> Model:
    """The real model: Claude through the anthropic SDK (reads ANTHROPIC_API_KEY)."""
    import anthropic

    client = anthropic.Anthropic()

    def answer(system: str, messages: list[dict[str, str]]) -> str:
        reply = client.messages.create(
            model=CLAUDE, max_tokens=300, system=system, messages=messages
        )
        return "".join(block.text for block in reply.content if block.type == "text")

    return answer


# ------------------------------------------------------------------ the agent


@dataclass
class SupportAgent:
    """One session's agent. It keeps nothing between sessions: before each reply it
    searches Elephant, and at the end of the session it commits the conversation."""

    memory: Elephant
    model: Model
    session_date: str
    turns: list[Turn] = field(default_factory=list)
    recalled: list[str] = field(default_factory=list)

    def recall(self, message: str) -> list[str]:
        """Facts only: they are what gets closed in time when superseded (the verbatim
        conversation windows keep the old wording, the old address included). As of the
        session's date: the sessions replay dated conversations, so memory answers as it
        stood that day, also when the script runs again on a server that knows the rest."""
        query = f"{CUSTOMER}: address, plan, contact preference. {message}"
        only: SearchFilters = {"kind": "fact", "as_of": self.session_date}
        hits = self.memory.search(query, limit=8, filters=only).results
        hits = sorted(
            (h for h in hits if h.subject == CUSTOMER), key=lambda h: h.event_at or h.created_at
        )
        return [f"[{(h.event_at or h.created_at):%Y-%m-%d}] {h.text}" for h in hits]

    def reply(self, message: str) -> str:
        self.recalled = self.recall(message)
        self.turns.append({"speaker": CUSTOMER, "text": message, "timestamp": self.session_date})
        history = [
            {"role": "user" if t["speaker"] == CUSTOMER else "assistant", "content": t["text"]}
            for t in self.turns
        ]
        answer = self.model(SYSTEM.format(memory="\n".join(self.recalled) or "(nothing)"), history)
        self.turns.append({"speaker": AGENT, "text": answer, "timestamp": self.session_date})
        return answer

    def end_session(self) -> str:
        result = self.memory.commit_conversation(
            self.turns, session_date=self.session_date, source=SOURCE, wait=True
        )
        windows = result.windows
        return (
            f"{result.turns} turns committed: {windows.stored} window(s) stored, "
            f"{windows.duplicate} duplicate; {result.facts or 0} fact(s) extracted"
        )


# ------------------------------------------------------------------ the run


def say(who: str, text: str) -> None:
    print(textwrap.fill(text, 96, initial_indent=f"{who:>11}: ", subsequent_indent=" " * 13))


def span(side: ContradictionSide | ChainLink) -> str:
    start, end = side.valid_from, side.valid_to
    return f"{start:%Y-%m-%d} .. {f'{end:%Y-%m-%d}' if end else 'now'}" if start else "?"


def run_session(memory: Elephant, model: Model, number: int) -> SupportAgent:
    date, title, lines = SESSIONS[number - 1]
    print(f"\n=== Session {number} ({date[:10]}): {title} ===")
    agent = SupportAgent(memory, model, date)  # a new instance: nothing carried over
    for line in lines:
        say(CUSTOMER, line)
        answer = agent.reply(line)
        for recalled in agent.recalled:
            say("memory", recalled)
        say("agent", answer)
    print(f"{'':>11}  [{agent.end_session()}]")
    return agent


@dataclass
class Kept:
    """What memory holds about the move once the sessions are over."""

    moves: list[Contradiction]  # old address closed in favour of the new one
    history: FactHistory | None  # the old address fact's chain
    then: list[str]  # facts about the customer true before the move
    now: list[str]  # facts about the customer true now


def show_what_memory_kept(memory: Elephant) -> Kept:
    print("\n=== What memory kept ===")
    ours = [c for c in memory.iter_contradictions() if CUSTOMER in c.newer.text]
    for c in ours:
        print(f"contradiction ({c.detector}, score {c.score:.2f}): {c.reason}")
        print(f"  older: {c.older.text} [{c.older.status}, valid {span(c.older)}]")
        print(f"  newer: {c.newer.text} [{c.newer.status}, valid {span(c.newer)}]")
    moves = [c for c in ours if OLD_ADDRESS in c.older.text and NEW_ADDRESS in c.newer.text]
    history = memory.fact_history(moves[0].older.id) if moves else None
    if history is not None:
        print(f"history of fact {history.fact.id}:")
        for link in history.chain:
            print(f"  step {link.step:+d}: {link.text} [{link.status}, valid {span(link)}]")
    then = [f.text for f in memory.iter_facts(subject=CUSTOMER, as_of=BEFORE_THE_MOVE)]
    now = [f.text for f in memory.iter_facts(subject=CUSTOMER, status="active")]
    for label, texts in ((f"as of {BEFORE_THE_MOVE[:10]}", then), ("now", now)):
        print(f"facts about {CUSTOMER} {label}:")
        for text in texts:
            print(f"  - {text}")
    return Kept(moves, history, then, now)


def check_all(agents: list[SupportAgent], kept: Kept, offline: bool) -> int:
    """Print every check; 1 when one failed."""
    remembered, after = agents[1], agents[3]
    history = kept.history
    checks = [
        (
            any(OLD_ADDRESS in r for r in remembered.recalled),
            "session 2 recalled the address from session 1",
        ),
        (any("Pro plan" in r for r in remembered.recalled), "session 2 recalled the plan"),
        (bool(kept.moves), "the move was recorded as a contradiction (old address older)"),
        (
            history is not None
            and history.fact.status == "superseded"
            and history.fact.valid_to is not None
            and any(link.step > 0 and NEW_ADDRESS in link.text for link in history.chain),
            "the old address is kept as history: superseded, valid_to set, replaced by the new",
        ),
        (
            any(OLD_ADDRESS in t for t in kept.then)
            and not any(NEW_ADDRESS in t for t in kept.then),
            f"as of {BEFORE_THE_MOVE[:10]} the old address was the true one",
        ),
        (
            any(NEW_ADDRESS in t for t in kept.now) and not any(OLD_ADDRESS in t for t in kept.now),
            "now only the new address is current",
        ),
        (
            any(NEW_ADDRESS in r for r in after.recalled)
            and not any(OLD_ADDRESS in r for r in after.recalled),
            "session 4 recalled the new address, not the old one",
        ),
    ]
    if offline:  # a real model words its replies as it likes
        checks += [
            (OLD_ADDRESS in remembered.turns[-1]["text"], "session 2's reply used the address"),
            (NEW_ADDRESS in after.turns[-1]["text"], "session 4's reply used the new address"),
        ]
    print("\n=== Checks ===")
    for ok, what in checks:
        print(f"{'ok  ' if ok else 'FAIL'} {what}")
    failed = sum(not ok for ok, _ in checks)
    print("all checks passed" if not failed else f"{failed} check(s) failed")
    return 1 if failed else 0


def main() -> int:
    offline = not os.environ.get("ANTHROPIC_API_KEY")
    model = scripted_model if offline else claude_model()
    print(f"model: {'scripted (offline)' if offline else f'{CLAUDE} (ANTHROPIC_API_KEY)'}")
    with elephant_server() as server, Elephant(server.url, api_key=server.api_key) as memory:
        agents = [run_session(memory, model, number) for number in range(1, len(SESSIONS) + 1)]
        kept = show_what_memory_kept(memory)
    return check_all(agents, kept, offline)


if __name__ == "__main__":
    sys.exit(main())
