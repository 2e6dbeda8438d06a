"""Standing preferences and instructions: what a person asks to hold from now on.

"Always answer in British English", "I'm vegetarian", "I prefer aisle seats":
said once, they matter for every later request on their topic, which topical
windows outrank. Each becomes a fact of type ``preference`` in the speaker's
own words (no rewriting that could garble it), so a later change of mind meets
the contradiction check like any fact, and search has a small lane for them
(sql/retrieval/hybrid_search.sql, ``preferences``).

Rules only, for the LLM and offline extractors alike; an assistant's turns are
never a person's preference.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

from app.services.facts.model import Assistants, ExtractedFact, TurnInput

_SENTENCE_RE = re.compile(r"[^.!?\n]+[.!?]*")
# Verbs a standing instruction gives: "always reply in ...", "never book ...". An
# adjective or a participle after "always"/"never" is chit-chat ("Always good to hear!",
# "Never been there").
_INSTRUCTION_VERBS = (
    r"use|reply|respond|answer|write|send|book|schedule|call|include|add|mention|suggest|"
    r"recommend|ask|remind|cc|copy|format|start|end|keep|give|show|put|check|double-check|"
    r"tell|email|text|order|pick|choose|sign|spell|round|convert|refer|address|list|cite|"
    r"quote|translate|summari[sz]e|explain|assume|contact|invite|share|save|store|post|"
    r"pay|charge|bill|invoice|fly|seat|wake|ping|notify|confirm|label|name|date"
)
_INSTRUCTION_RE = re.compile(
    r"^(?:(?:please|and|also|oh|ok|okay|so)[\s,]+)*(?:"
    rf"(?:always|never)\s+(?:{_INSTRUCTION_VERBS})\b|"
    r"(?:from now on|going forward),?\s+(?:please\s+)?"
    rf"(?:always\s+|never\s+|don't\s+|do not\s+)?(?:{_INSTRUCTION_VERBS}|i|my|we)\b|"
    r"in (?:the )?future,?\s+(?:please\s+)?"
    rf"(?:always\s+|never\s+|don't\s+|do not\s+)?(?:{_INSTRUCTION_VERBS})\b|"
    rf"(?:do not|don't|dont)\s+(?:ever\s+)?(?:{_INSTRUCTION_VERBS})\b|"
    r"make sure (?:to|you)\b|"
    r"remember that (?:i|my|we)\b|"
    r"(?:i want|i'd like|i would like) you to\b)",
    re.IGNORECASE,
)
_PREFERENCE_RE = re.compile(
    r"\b(?:i|i'm|i am|we|we're)\s+(?:"
    r"(?:really |generally |usually |always |strongly )?(?:prefer|hate|dislike|can't stand|"
    r"cannot stand|don't like|do not like|don't eat|do not eat|never eat|avoid)\b|"
    r"(?:'d|would) rather\b|"
    r"(?:am |'m )?(?:allergic|intolerant) to\b|"
    r"(?:am |'m )?(?:a )?(?:vegetarian|vegan|pescatarian|teetotal|gluten[- ]free)\b)|"
    r"\bmy (?:favou?rite|preferred)\b(?: [\w'-]+){0,4} (?:is|are)\b|"
    r"\bmy (?:favou?rite|preferred) is\b",
    re.IGNORECASE,
)
_MIN_WORDS, _MAX_WORDS = 3, 40
# The topic a standing statement is about, named in its fact so that a request on that
# topic ("recommend a restaurant") is near it even for a small embedding model, which
# does not relate "I'm vegetarian" to dinner plans on its own. First match wins.
_TOPICS = (
    (
        "food, meals and restaurants",
        r"vegetarian|vegan|pescatarian|allergic|intolerant|gluten|dairy|meat|fish|eat|food|"
        r"meal|dish|restaurant|spicy|cook|coffee|tea|drink|wine|beer|alcohol|teetotal|sugar",
    ),
    (
        "travel, flights and hotels",
        r"flight|fly|flying|seat|airline|airport|hotel|train|travel|trip|layover|car rental",
    ),
    (
        "meetings, calls and scheduling",
        r"meeting|schedul|call|calendar|appointment|\d\s*(?:am|pm)|morning|afternoon|evening",
    ),
    (
        "writing, replies and emails",
        r"repl|answer|write|writing|email|tone|emoji|language|english|format|bullet|summar",
    ),
    ("money, invoices and payments", r"invoice|pay|price|budget|euro|dollar|currency|bank"),
    ("films, music and books", r"music|song|movie|film|book|show|series|podcast|horror|comed"),
    ("code and software", r"code|python|javascript|typescript|library|framework|tabs|spaces|git"),
    ("health and exercise", r"exercise|gym|running|doctor|medicine|medication|sleep|diet"),
)
_TOPIC_RES = tuple((name, re.compile(rf"\b(?:{words})", re.IGNORECASE)) for name, words in _TOPICS)


def topic_of(sentence: str) -> str | None:
    return next((name for name, pattern in _TOPIC_RES if pattern.search(sentence)), None)


def standing_text(who: str, kind: str, sentence: str) -> str:
    """ "Maya's standing preference on food, meals and restaurants: I'm vegetarian." """
    topic = topic_of(sentence)
    about = f" on {topic}" if topic else ""
    return f"{who}'s standing {kind}{about}: {sentence}"


def standing_kind(sentence: str) -> str | None:
    """``instruction``, ``preference`` or None for one sentence."""
    words = len(sentence.split())
    if not _MIN_WORDS <= words <= _MAX_WORDS or sentence.rstrip().endswith("?"):
        return None
    if _INSTRUCTION_RE.search(sentence.strip()):
        return "instruction"
    if _PREFERENCE_RE.search(sentence):
        return "preference"
    return None


def standing_facts(
    turns: Sequence[TurnInput], assistant_speakers: Collection[str]
) -> list[ExtractedFact]:
    """One preference fact per standing sentence of a person (a note's author counts)."""
    assistants = Assistants.named(assistant_speakers)
    found: dict[str, ExtractedFact] = {}
    for turn in turns:
        who = turn.speaker or turn.author
        if not who or assistants.said(turn.speaker):
            continue
        for match in _SENTENCE_RE.finditer(turn.text):
            sentence = " ".join(match[0].split())
            kind = standing_kind(sentence)
            if kind is None:
                continue
            text = standing_text(who, kind, sentence)
            earlier = found.get(text.casefold())
            ids = [turn.turn_id] if turn.turn_id else []
            if earlier is not None:
                ids = earlier.source_turn_ids + [i for i in ids if i not in earlier.source_turn_ids]
            found[text.casefold()] = ExtractedFact(
                text=text,
                subject=who,
                fact_type="preference",
                valid_from=turn.timestamp,
                confidence=0.9,
                source_turn_ids=ids,
            )
    return list(found.values())
