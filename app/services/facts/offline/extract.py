"""The offline extractor's entry point: a conversation's turns in, de-duplicated facts out.

Decides who each turn speaks to, walks segments, sentences and clauses, and keeps one
fact per claim (within a turn by content words, across turns by wording).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from datetime import datetime

from app.config import DEFAULT_ASSISTANT_SPEAKERS
from app.services.facts.model import Assistants, ExtractedFact, TurnInput
from app.services.facts.offline.entities import capitalised_evidence
from app.services.facts.offline.lexicon import content_words
from app.services.facts.offline.markdown import text_segments
from app.services.facts.offline.pronouns import Person
from app.services.facts.offline.rewrite import Context, clause_fact
from app.services.facts.offline.sentences import clean, split_clauses, split_sentences


def _key(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def _person(name: str | None) -> Person | None:
    if not name or not name.strip():
        return None
    name = name.strip()[:200]
    return Person(name, f"{name} and others")


def _addressees(turns: Sequence[TurnInput]) -> list[str | None]:
    """Who each turn speaks to: the previous other speaker, else the next one. O(n)."""

    def previous_others(order: Sequence[TurnInput]) -> list[str | None]:
        found: list[str | None] = []
        recent: list[str] = []  # the last two distinct speakers, most recent first
        for turn in order:
            found.append(next((s for s in recent if s != turn.speaker), None))
            if turn.speaker:
                recent = [turn.speaker, *[s for s in recent if s != turn.speaker]][:2]
        return found

    before = previous_others(turns)
    after = previous_others(list(reversed(turns)))[::-1]
    return [b if b is not None else a for b, a in zip(before, after, strict=True)]


def _fact_words(fact: ExtractedFact) -> frozenset[str]:
    """Content words with a plural "s" dropped: what near-identical facts share."""
    return frozenset(
        w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
        for w in content_words(fact.text)
    )


NEAR_DUPLICATE_JACCARD = 0.8


def _near_duplicate(a: frozenset[str], b: frozenset[str]) -> bool:
    """The same claim said twice: (nearly) the same content words, no other number."""
    if not a or not b or any(w[:1].isdigit() for w in a ^ b):
        return False
    return a == b or len(a & b) / len(a | b) >= NEAR_DUPLICATE_JACCARD


def _one_per_claim(facts: list[ExtractedFact]) -> list[ExtractedFact]:
    """A turn's facts without near-identical repeats; the more specific one stays."""
    kept: list[tuple[frozenset[str], ExtractedFact]] = []
    for fact in facts:
        words = _fact_words(fact)
        twin = next((i for i, (w, _) in enumerate(kept) if _near_duplicate(w, words)), None)
        if twin is None:
            kept.append((words, fact))
            continue
        other_words, other = kept[twin]
        if (len(words), len(fact.text)) > (len(other_words), len(other.text)):
            kept[twin] = (words, _merged(fact, other))
        else:
            kept[twin] = (other_words, _merged(other, fact))
    return [fact for _, fact in kept]


def _merged(kept: ExtractedFact, dropped: ExtractedFact) -> ExtractedFact:
    """kept, citing dropped's turns too; an assistant's claim the user also made is the
    user's."""
    ids = kept.source_turn_ids + [
        t for t in dropped.source_turn_ids if t not in kept.source_turn_ids
    ]
    said_by_assistant = kept.said_by_assistant and dropped.said_by_assistant
    confidence = kept.confidence
    if kept.said_by_assistant and not said_by_assistant:
        confidence = dropped.confidence
    return kept.model_copy(
        update={
            "source_turn_ids": ids,
            "said_by_assistant": said_by_assistant,
            "confidence": confidence,
        }
    )


def extract_offline(
    turns: Sequence[TurnInput],
    session_date: datetime | None,
    *,
    assistant_speakers: Collection[str] = DEFAULT_ASSISTANT_SPEAKERS,
    from_assistant: bool = True,
) -> list[ExtractedFact]:
    """Facts from a conversation (or notes) by rules alone; deterministic and de-duplicated.

    The anchor for relative dates is each turn's timestamp, else the session date.
    A note (speaker None) with an author attributes its first-person sentences to
    the author. Markdown layout (headings, list labels, code, tables, links) is never
    a fact. A turn whose speaker is in assistant_speakers (any case) gives only
    concrete facts, marked said_by_assistant, at most ASSISTANT_CONFIDENCE sure; none
    at all without from_assistant.
    """
    assistants = Assistants.named(assistant_speakers)
    people = frozenset(
        name.lower() for t in turns for name in (t.speaker, t.author) if name and name.strip()
    )
    evidence = capitalised_evidence(turn.text for turn in turns)
    facts: list[ExtractedFact] = []
    index_of: dict[str, int] = {}
    for turn, other in zip(turns, _addressees(turns), strict=True):
        assistant = assistants.said(turn.speaker)
        if assistant and not from_assistant:
            continue
        ctx = Context(
            speaker=_person(turn.speaker) or _person(turn.author),
            addressee=_person(other) if turn.speaker else None,
            people=people,
            anchor=turn.timestamp or session_date,
            turn_id=turn.turn_id,
            note=not turn.speaker,
            assistant=assistant,
            evidence=evidence,
        )
        found: list[ExtractedFact] = []
        for segment in text_segments(turn.text):
            for sentence in split_sentences(clean(segment.text)):
                if sentence.rstrip().endswith("?"):
                    continue
                for clause in split_clauses(sentence):
                    fact = clause_fact(clause, ctx, segment.strict) if clause else None
                    if fact is not None:
                        found.append(fact)
        for fact in _one_per_claim(found):
            key = _key(fact.text)
            if key in index_of:
                facts[index_of[key]] = _merged(facts[index_of[key]], fact)
                continue
            index_of[key] = len(facts)
            facts.append(fact)
    return facts
