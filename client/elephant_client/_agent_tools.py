"""The memory tools of the agent-SDK adapters (``openai_agents``, ``pydantic_ai``), written once.

``memory_functions`` returns five async functions bound to a client; each SDK builds its
tools from their signatures and Google-style docstrings (the descriptions the model
reads), so the adapters only add their SDK's way of reporting a failure:

=================  ======================  =============================================
tool               client call             returns (text for the model)
=================  ======================  =============================================
search_memory      search                  ``[n] id=... kind date source=...: text`` lines
remember           commit                  stored / duplicate (with the memory id) /
                                           rejected by the admission gate (with why)
recall_facts       facts(as_of, subject)   ``[n] id=... subject=... valid <dates>: text``
reflect            reflect                 the answer and its numbered sources; the
                                           sources alone when the server has no LLM
close_session      close_session           the handoff: summary, decisions, open
                                           questions, next steps
=================  ======================  =============================================

A refused call raises the client's ``ElephantError`` (or what the adapter's ``refuse``
makes of it); ``error_text`` says what went wrong to the model.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Any

from elephant_client._async import AsyncElephant
from elephant_client._errors import (
    ConnectionFailed,
    ElephantError,
    InvalidInput,
    NotFound,
    RateLimited,
    ServerError,
)
from elephant_client._models import (
    CommitResult,
    Fact,
    Handoff,
    Page,
    Reflection,
    ReflectSource,
    SearchHit,
    SearchResult,
    SessionClosed,
)
from elephant_client._sync import Elephant

ToolFunction = Callable[..., Awaitable[str]]
Refusal = Callable[[ElephantError], Exception]
"""What a tool raises instead of the client's error (None: the error itself)."""

TEXT_MAX_CHARS = 1200
"""A search hit's or a source's text is cut here (a conversation window can be long)."""

_CLOSE_SESSION = """End the work session: store its transcript in long-term memory, extract
its facts and write the project's handoff (summary, decisions, open questions, next steps)
for whoever works on the project next.

Call it once, when the session is over. Returns the handoff.

Args:
    transcript: The session as text. "Speaker: text" lines become turns (e.g. "user: Ship
        the fix on Friday."); other text is one turn, so a written summary of the session
        works too. Include the decisions and what is left to do.
"""
_PROJECT_ARG = """    project: The project the session was on, e.g. the repository's name; the next
        session on the same project receives this handoff.
"""


def memory_functions(
    client: AsyncElephant | Elephant,
    *,
    project: str | None = None,
    source: str = "agent",
    wait: bool = False,
    force: bool = False,
    refuse: Refusal | None = None,
) -> list[ToolFunction]:
    """search_memory, remember, recall_facts, reflect and close_session over ``client``.

    ``project``: the project close_session writes its handoff to (None: the model names
    it). ``source``: the source of the notes remember stores. ``wait``: remember returns
    once the note's facts are extracted (recall_facts lists them at once). ``force``:
    remember stores every note, bypassing the admission gate. ``refuse``: the exception
    a tool raises for a refused call (None: the client's own ``ElephantError``).
    """

    async def call(method: str, /, **kwargs: Any) -> Any:
        """The client's ``method``: awaited on the async client, in a worker thread on the
        sync one (a blocking request must not stall the agent's event loop)."""
        bound = getattr(client, method)
        try:
            if isinstance(client, AsyncElephant):
                return await bound(**kwargs)
            return await asyncio.to_thread(bound, **kwargs)
        except ElephantError as exc:
            if refuse is None:
                raise
            raise refuse(exc) from exc

    async def search_memory(query: str, limit: int = 8) -> str:
        """Search long-term memory (notes, conversation excerpts and facts extracted from
        them) by meaning and by keywords.

        Use it before answering anything that may depend on earlier conversations: the
        user's preferences, decisions, people, plans, dates. Returns the best matches,
        best first, one per line: `[n] id=<id> <kind> <date> source=<source>: <text>`.
        Cite a match by its id.

        Args:
            query: What to look for, as a question or keywords, e.g. "Where does Dana live?".
            limit: How many matches at most, 1 to 200.
        """
        found: SearchResult = await call("search", query=query, limit=limit)
        if not found.results:
            return f"No memory matches {query!r}."
        matches = "memory matches" if found.count == 1 else "memories match"
        lines = [f"{found.count} {matches} {query!r}, best first:"]
        lines += [_hit(n, hit) for n, hit in enumerate(found.results, 1)]
        return "\n".join(lines)

    async def remember(
        text: str, subject: str | None = None, occurred_at: str | None = None
    ) -> str:
        """Store a note in long-term memory, to be found in later conversations.

        Write one self-contained statement: who, what and when, with names rather than
        pronouns, e.g. "Dana moved from Berlin to Lisbon in February 2025.". Facts are
        extracted from it (recall_facts lists them). A note stored before is recognised
        as a duplicate; an admission gate may refuse chit-chat or vague text, and the
        reply says why.

        Args:
            text: The note, self-contained.
            subject: Who "I" is, when the note is written in the first person
                (e.g. "Dana"); omit otherwise.
            occurred_at: When what the note says happened or became true, ISO 8601
                (e.g. 2025-02-01 or 2025-02-01T09:30:00Z); omit for now.
        """
        stored: CommitResult = await call(
            "commit",
            text=text,
            source=source,
            subject=subject,
            occurred_at=occurred_at,
            force=force,
            wait=wait,
        )
        if stored.status == "rejected":
            return (
                f"Not stored: the admission gate refused the note ({stored.gate.reason}). "
                "Rewrite it as a specific, self-contained statement, or leave it."
            )
        if stored.status == "duplicate":
            return f"Already in memory: the same note is memory {stored.memory_id}."
        facts = "" if stored.facts is None else f"; {_count(stored.facts, 'fact')} extracted"
        return f"Stored as memory {stored.memory_id}{facts}."

    async def recall_facts(
        as_of: str | None = None, subject: str | None = None, limit: int = 50
    ) -> str:
        """List the facts that were true at a point in time (by default: the current
        facts), newest first.

        Facts are single statements extracted from stored notes and conversations; each
        holds from one date until a later fact replaced it. Use it for the state of
        things at a date ("where did Dana live in June 2024?") or now. One fact per line:
        `[n] id=<id> subject=<subject> valid <from> to <until>: <text>` (no end: it
        still holds).

        Args:
            as_of: The instant, ISO 8601 date or date-time (e.g. 2024-06-01); omit for
                the current facts (those no later fact has replaced).
            subject: Only the facts about this person, project or thing (any case),
                e.g. "Dana"; omit for every subject.
            limit: How many facts at most, 1 to 200.
        """
        status = None if as_of else "active"  # no date: what holds now
        page: Page[Fact] = await call(
            "facts", as_of=as_of, subject=subject, status=status, limit=limit
        )
        when = f"true as of {as_of}" if as_of else "true now"
        about = f" about {subject}" if subject else ""
        if not page.items:
            return f"No facts{about} {when}."
        lines = [f"{_count(len(page.items), 'fact')}{about} {when}, newest first:"]
        lines += [_fact(n, fact) for n, fact in enumerate(page.items, 1)]
        if page.next_cursor is not None:
            lines.append(f"(more facts exist: ask with a limit above {limit})")
        return "\n".join(lines)

    async def reflect(question: str) -> str:
        """Answer a question from long-term memory, citing the memories it used.

        Returns the answer followed by its numbered sources ([n] id, kind, date, text).
        When the memory server has no language model to write the answer, only the
        sources come back: answer from them yourself. For a simple lookup prefer
        search_memory; use reflect when the answer combines several memories.

        Args:
            question: The question, e.g. "What did we decide about the launch date?".
        """
        reply: Reflection = await call("reflect", query=question)
        sources = [_source(item) for item in reply.sources]
        if reply.answer is not None:
            return "\n".join([f"Answer: {reply.answer}", "Sources:", *sources])
        if not sources:
            return "Memory holds nothing relevant to this question."
        why = reply.note or "the memory server has no language model"
        head = f"No answer was written ({why}). Answer from these sources, citing them:"
        return "\n".join([head, *sources])

    async def close(project: str, transcript: str) -> str:
        closed: SessionClosed = await call("close_session", project=project, transcript=transcript)
        facts = "" if closed.facts is None else f", {_count(closed.facts, 'fact')} extracted"
        head = (
            f"Session stored as conversation {closed.conversation_id} "
            f"({closed.turns} turns{facts}). Handoff for project {closed.project!r}:"
        )
        return "\n".join([head, *_handoff(closed.handoff)])

    close_session = _close_named(close) if project is None else _close_fixed(close, project)
    return [search_memory, remember, recall_facts, reflect, close_session]


def _close_named(close: Callable[[str, str], Awaitable[str]]) -> ToolFunction:
    """close_session taking the project from the model."""

    async def close_session(transcript: str, project: str) -> str:
        return await close(project, transcript)

    close_session.__doc__ = _CLOSE_SESSION + _PROJECT_ARG
    return close_session


def _close_fixed(close: Callable[[str, str], Awaitable[str]], project: str) -> ToolFunction:
    """close_session for the one project the tools were made for."""

    async def close_session(transcript: str) -> str:
        return await close(project, transcript)

    close_session.__doc__ = _CLOSE_SESSION
    return close_session


def error_text(exc: ElephantError) -> str:
    """What a refused call says to the model: what went wrong and what to do about it."""
    message = exc.message.rstrip(".")
    if isinstance(exc, InvalidInput):  # the message names each field and its problem
        return f"Memory refused the arguments: {message}. Fix them and call again."
    if isinstance(exc, NotFound):
        return f"Not found in memory: {message}."
    if isinstance(exc, RateLimited):
        wait = "" if exc.retry_after is None else f" for {exc.retry_after:g} s"
        return f"Memory is rate limited{wait}: {message}. Continue without it for now."
    if isinstance(exc, ServerError | ConnectionFailed):
        return f"Memory is unavailable ({exc}). Continue without it for now."
    return f"Memory refused the call ({exc})."


# ------------------------------------------------------------------ text for the model


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= TEXT_MAX_CHARS else text[: TEXT_MAX_CHARS - 1] + "…"


def _day(value: datetime) -> str:
    return value.date().isoformat()


def _hit(n: int, hit: SearchHit) -> str:
    source = f" source={hit.source}" if hit.source else ""
    when = _day(hit.event_at or hit.created_at)
    return f"[{n}] id={hit.id} {hit.kind} {when}{source}: {_clip(hit.text)}"


def _fact(n: int, fact: Fact) -> str:
    subject = f" subject={fact.subject}" if fact.subject else ""
    status = "" if fact.status == "active" else f" ({fact.status})"
    return f"[{n}] id={fact.id}{subject}{_validity(fact)}{status}: {_clip(fact.text)}"


def _validity(fact: Fact) -> str:
    """When the fact held: " valid 2024-01-10 to 2025-02-01", " valid since ...", ""."""
    start, end = fact.valid_from, fact.valid_to
    if start is not None and end is not None:
        return f" valid {_day(start)} to {_day(end)}"
    if start is not None:
        return f" valid since {_day(start)}"
    return "" if end is None else f" valid until {_day(end)}"


def _source(item: ReflectSource) -> str:
    source = f" source={item.source}" if item.source else ""
    return f"[{item.n}] id={item.id} {item.kind} {item.date}{source}: {_clip(item.text)}"


def _handoff(handoff: Handoff) -> list[str]:
    lines = [f"Summary: {handoff.summary}"]
    for title, items in (
        ("Decisions", handoff.decisions),
        ("Open questions", handoff.open_questions),
        ("Next steps", handoff.next_steps),
    ):
        lines += _listed(title, items)
    return lines


def _listed(title: str, items: Sequence[str]) -> list[str]:
    return [f"{title}: none"] if not items else [f"{title}:", *(f"- {item}" for item in items)]
