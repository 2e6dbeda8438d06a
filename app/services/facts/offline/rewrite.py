"""One clause turned into an atomic, attributed fact, or rejected.

The clause is tidied, its dates made absolute, its pronouns resolved to the speaker or
the listener, its names collected as entities; it is kept only as a whole sentence, and
an assistant's clause only when it is concrete. Confidence reflects length and whether
the statement is reported speech.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from app.services.facts.model import EntityRef, ExtractedFact, FactType
from app.services.facts.offline import sentences
from app.services.facts.offline.dating import rewrite_dates
from app.services.facts.offline.entities import recognise, title_case
from app.services.facts.offline.grammar import dangling, finite_verb
from app.services.facts.offline.lexicon import DIGIT_RE, SPACE_RE, content_words
from app.services.facts.offline.names import find_names, leading_name
from app.services.facts.offline.pronouns import Person, implicit_subject, resolve_pronouns

MAX_FACT_CHARS = 300


def _finish(text: str) -> str:
    text = SPACE_RE.sub(" ", text).strip(" \t,;:-\u2013\u2014").rstrip(" .!?,;:")
    for quote in "\"'":
        if text.count(quote) % 2 and text.startswith(quote):
            text = text[1:]
        if text.count(quote) % 2 and text.endswith(quote):
            text = text[:-1]
    if len(text) > MAX_FACT_CHARS:
        cut = text[:MAX_FACT_CHARS]
        text = cut[: cut.rfind(" ")] if " " in cut else cut
        text = text.rstrip(" ,;:-")
    return text[:1].upper() + text[1:] if text else text


def _lower_first(text: str) -> str:
    """Lower-case a sentence opener that is an ordinary word, for 'X said the ...'."""
    first = text.split(" ", 1)[0]
    if first == "I" or first.isupper() or leading_name(text) is not None:
        return text
    return text[:1].lower() + text[1:]


ASSISTANT_CONFIDENCE = 0.5  # the most an assistant's statement is trusted


def _confidence(text: str, reported: bool, implicit: bool, assistant: bool = False) -> float:
    words = len(text.split())
    value = 0.8 - max(0, words - 15) * 0.01 - (0.05 if reported else 0) - (0.05 if implicit else 0)
    value = min(0.8, max(0.6, value))
    return round(min(value, ASSISTANT_CONFIDENCE) if assistant else value, 2)


@dataclass(frozen=True)
class Context:
    speaker: Person | None  # for a note: its author, who "I" is
    addressee: Person | None
    people: frozenset[str]
    anchor: datetime | None
    turn_id: str | None
    note: bool = False  # a note: nothing in it is reported speech or said to anyone
    assistant: bool = False  # an assistant's turn: only concrete statements, lower trust
    # words the conversation capitalises mid-sentence (entities.capitalised_evidence)
    evidence: frozenset[str] = frozenset()


def _as_utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


def clause_fact(clause: str, ctx: Context, strict: bool = False) -> ExtractedFact | None:
    """The fact one clause states, or None: chit-chat, a question, advice, a fragment.

    strict (a list item, a label's value): kept only as a full clause. A fact is a
    whole sentence: its clause has a finite verb after a subject and does not stop
    mid-phrase. An assistant's statement is kept only when it is concrete (a number
    or a name) and is reported as the assistant's words.
    """
    text = sentences.tidy(clause, ctx.people)
    if not text or text.endswith("?"):
        return None
    text = sentences.unslang(text)
    first_person = ctx.speaker is not None and sentences.in_first_person(text)
    spoken = ctx.speaker is not None and not ctx.note
    if spoken and sentences.small_talk(text, first_person):
        return None
    informative = [w for w in content_words(text) if w not in ctx.people]
    vague = spoken and not first_person and sentences.pronoun_opener(text)
    dated, event = rewrite_dates(text, ctx.anchor)
    # a dated event is worth keeping even when short: "I visited her yesterday"
    needed = (3 if vague else 2) - (event is not None and dated != text)
    if len(informative) < needed:
        return None

    who = _attribute(dated, first_person, ctx)
    if finite_verb(who.dated, strict) is None:
        return None
    body = who.body
    # names come from the text before pronouns were resolved ("me of my" is no name)
    entities = _entities(who.dated, ctx, ctx.speaker if spoken or who.first_person else None)
    addressee = ctx.addressee.name if ctx.addressee else None
    if (
        addressee
        and addressee not in {e.name for e in entities}
        and re.search(rf"\b{re.escape(addressee)}\b", body)
    ):
        entities.append(EntityRef(name=addressee, type="person"))
    if ctx.assistant and not _concrete(who.dated, ctx):
        return None  # generic advice: "Stay hydrated", "A hung connection blocks the worker"
    if who.reported and ctx.speaker is not None:
        body = f"{ctx.speaker.name} said {_lower_first(body)}"
    body = _finish(body)
    if not body or dangling(body, cut=clause.rstrip().endswith(("...", "\u2026"))):
        return None

    return ExtractedFact(
        text=body,
        subject=who.subject,
        entities=entities,
        fact_type=who.fact_type,
        valid_from=_as_utc(event if event is not None else ctx.anchor),
        confidence=_confidence(body, who.reported, who.implicit, ctx.assistant),
        source_turn_ids=[ctx.turn_id] if ctx.turn_id else [],
        said_by_assistant=ctx.assistant,
    )


def _concrete(text: str, ctx: Context) -> bool:
    """A number, a quoted title, or a name other than the conversation's people.

    An opening capitalised word is no name here ('Indexes speed up reads'), nor is an
    acronym alone ('the HTTP call'); 'Hoshinoya Kyoto' and 'stay at Hoshinoya' are.
    """
    if DIGIT_RE.search(text) or _QUOTED_RE.search(text):
        return True
    for offset, name in find_names(text, ctx.people):
        if name.lower() in ctx.people or (name.isupper() and " " not in name):
            continue
        if offset > 0 or " " in name:
            return True
    return False


@dataclass(frozen=True)
class _Attribution:
    """Who a clause is about, and the clause rewritten to say so."""

    dated: str  # the clause before pronouns were resolved: names are read from it
    body: str
    subject: str | None
    fact_type: FactType
    reported: bool  # a conversation statement not about its speaker: "X said ..."
    implicit: bool  # the subject was added to a subjectless clause ("Moved to Rome")
    first_person: bool


def _attribute(dated: str, first_person: bool, ctx: Context) -> _Attribution:
    """First person becomes the speaker (a note's author); other statements keep their
    own subject, and in a conversation are reported as the speaker's words."""
    if ctx.speaker is None:
        subject = leading_name(dated, ctx.people)
        return _Attribution(dated, dated, subject, "world", False, False, False)
    name = ctx.speaker.name
    lead = implicit_subject(dated, name)
    if lead is not None:
        dated, first_person = lead, True
    body = resolve_pronouns(dated, ctx.speaker, ctx.addressee)
    if first_person:
        reported = not ctx.note and not re.search(rf"\b{re.escape(name)}\b", body)
        return _Attribution(dated, body, name, "experience", reported, lead is not None, True)
    subject = leading_name(dated, ctx.people)  # before "you" became a name
    if ctx.note:  # a note about someone else: "Alice moved to Berlin"
        return _Attribution(dated, body, subject, "world", False, False, False)
    # an assistant's claim about the world stays its claim: "AI said Gunicorn's ..."
    reported = subject is None or ctx.assistant
    return _Attribution(dated, body, subject or name, "world", reported, False, False)


_QUOTED_RE = re.compile(r'"([^"]{2,80})"|(?<!\w)\'([A-Z][^\']{1,80})\'(?!\w)')


def _entities(text: str, ctx: Context, speaker: Person | None) -> list[EntityRef]:
    """The speaker (if the fact involves them), quoted titles, then every entity the
    recogniser finds in text (offline/entities.py), typed."""
    entities: list[EntityRef] = []
    seen: set[str] = set()
    if speaker is not None:
        entities.append(EntityRef(name=speaker.name, type="person"))
        seen.add(speaker.name.lower())
    for m in _QUOTED_RE.finditer(text):
        title = (m[1] or m[2]).strip(" ,.!?")
        if title_case(title) and title.lower() not in seen and len(title) <= 200:
            seen.add(title.lower())
            entities.append(EntityRef(name=title, type="work"))
    unquoted = _QUOTED_RE.sub(lambda m: " " * len(m[0]), text)
    for mention in recognise(unquoted, ctx.people, evidence=ctx.evidence):
        if mention.type == "date" or mention.name.lower() in seen or len(mention.name) > 200:
            continue  # a fact's date is its valid_from, no vertex of the graph
        seen.add(mention.name.lower())
        entities.append(EntityRef(name=mention.name, type=mention.type))
    return entities
