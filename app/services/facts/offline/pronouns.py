"""Pronouns resolved to the people of a turn, and subjects added to subjectless clauses.

"I'm moving" said by Caroline becomes "Caroline is moving", "you" becomes the other
speaker, "we" becomes "Caroline and others"; a clause with no subject ("Gonna continue
my edu", "Been busy") gets the speaker as its subject.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from app.services.facts.offline.grammar import third_person
from app.services.facts.offline.lexicon import (
    ADVERBS,
    EMOTION_ADJECTIVES,
    FINITE_VERBS,
    IRREGULAR_PAST,
    OBJECTS,
    SUBJECT_PRONOUNS,
    word_set,
)

# Words ending in -ing that are no verb: a sentence opening with one has no implicit
# subject ("During the week ..." must not become "Tom is during the week ...").
_NON_VERB_ING = word_set(
    """
    something nothing anything everything thing king during according regarding including
    excluding notwithstanding pending morning evening wedding ceiling sibling
    """
)

_VERB_AFTER_RE = re.compile(rf"((?:\s+{ADVERBS}\b)*)(\s+)([A-Za-z][a-z']*)")


@dataclass(frozen=True)
class Person:
    """Who a pronoun stands for in one turn."""

    name: str
    group: str  # the rendering of "we" / "us"


_PRONOUN_RE = re.compile(
    r"\b(?P<subj>I|i|you|You|YOU)(?:'m|\s+am)\s+not\b"
    r"|\b(?P<be>I|i)(?:'m|\s+am)\b"
    r"|\b(?P<be2>you|You)(?:'re|\s+are)\b"
    r"|\b(?P<was>you|You)\s+were\b"
    r"|\b(?P<have>I|i|you|You)(?:'ve|\s+have)\b"
    r"|\b(?P<had>I|i|you|You)'d(?=\s+(?:been|had|gone|done|never|already|just|seen|always)\b)"
    r"|\b(?P<would>I|i|you|You)'d\b"
    r"|\b(?P<will>I|i|you|You)(?:'ll|\s+will)\b"
    r"|\b(?P<we>we|We)(?P<we_tail>'re|'ve|'ll|'d)?\b"
    r"|\b(?P<us>us|Us)\b"
    r"|\b(?P<ourselves>ourselves|Ourselves)\b"
    r"|\b(?P<our>our|Our|ours|Ours)\b"
    r"|\b(?P<my>my|My|mine|Mine)\b(?!-)"
    r"|\b(?P<alone>by\s+(?:myself|yourself))\b"
    r"|\b(?P<emphatic>(?<=\bI\s)myself)\b"
    r"|\b(?P<me>me|Me|myself|Myself)\b(?!-)"
    r"|\b(?P<your>your|Your|yours|Yours)\b"
    r"|\b(?P<yourself>yourself|Yourself)\b"
    r"|\b(?P<bare>I|i|you|You)\b(?!'|\.\w)"
)
# "you" is a subject (its verb must agree) only at a clause start; elsewhere it is an object.
_SUBJECT_SLOT_RE = re.compile(
    r"(?:^|[,;:]|\b(?:and|but|so|if|when|because|that|then|while|as|since|where|until|unless"
    r"|though|although|what|how|once|whether|cause|think|know|hope|guess|bet|believe|feel"
    r"|mean|wish|sure|bet|glad|seems|heard))\s*$",
    re.IGNORECASE,
)
_COORDINATED_RE = re.compile(r"(?:\b[A-Z][\w']*|\b(?i:my|our)\s+\w+)\s+and\s*$")
_WE_TAILS = {"'re": " are", "'ve": " have", "'ll": " will", "'d": " would"}


def resolve_pronouns(text: str, speaker: Person, addressee: Person | None) -> str:
    """Replace first-person (and, when known, second-person) pronouns by names."""

    def who(word: str) -> Person | None:
        return addressee if word.lower() == "you" else speaker

    out: list[str] = []
    pos = 0
    for m in _PRONOUN_RE.finditer(text):
        if m.start() < pos:
            continue
        kind = m.lastgroup if m.lastgroup != "we_tail" else "we"
        if kind in ("alone", "emphatic"):  # "by myself" -> "alone"; "I myself" -> "Ann"
            out.append(text[pos : m.start()] + ("alone" if kind == "alone" else ""))
            pos = m.end()
            continue
        word = m[kind or "bare"]
        person = who(word) if kind not in ("we", "us", "our", "ourselves") else speaker
        if kind in ("your", "yourself"):
            person = addressee
        if person is None:
            continue
        out.append(text[pos : m.start()])
        pos = m.end()
        name = person.name
        if kind == "subj":
            out.append(f"{name} is not")
        elif kind in ("be", "be2"):
            out.append(f"{name} is")
        elif kind == "was":
            out.append(f"{name} was")
        elif kind == "have":
            out.append(f"{name} has")
        elif kind == "had":
            out.append(f"{name} had")
        elif kind == "would":
            out.append(f"{name} would")
        elif kind == "will":
            out.append(f"{name} will")
        elif kind == "we":
            out.append(person.group + _WE_TAILS.get(m["we_tail"] or "", ""))
        elif kind == "us":
            out.append(person.group)
        elif kind == "ourselves":
            out.append("themselves")
        elif kind in ("our", "my", "your"):
            out.append(f"{name}'s")
        elif kind in ("me", "yourself"):
            out.append(name)
        else:  # bare "I" / "you": the verb that follows must agree with a third person
            out.append(name)
            verb = _VERB_AFTER_RE.match(text, pos)
            slot = text[: m.start()]
            if (
                verb
                and (word.lower() == "i" or _SUBJECT_SLOT_RE.search(slot))
                and not _COORDINATED_RE.search(slot)  # "Gina and I are": plural
            ):
                agreed = third_person(verb[3])
                if agreed != verb[3]:
                    out.append(verb[1] + verb[2] + agreed)
                    pos = verb.end()
    out.append(text[pos:])
    return "".join(out)


_OPENING_ADVERBS = frozenset(
    {"really", "also", "finally", "totally", "actually", "recently", "still", "just", "always"}
)
_AUXILIARY_RE = re.compile(r"^(is|has|was|will|can|would)\s+")


# Words after which a participle belongs to the gerund's own phrase: "Trying to get it
# fixed", "Working on a project I started".
_GERUND_OBJECT_END = word_set("he she who that which to it get got be been being have has had")


def _gerund_subject(following: list[str]) -> bool:
    """Whether a past-tense verb follows an opening gerund's short object with no subject
    of its own in between: 'Adding timeout=10 fixed it', not 'Working on a project I
    started'."""
    for word in following[:4]:
        if word in SUBJECT_PRONOUNS or word in _GERUND_OBJECT_END:
            return False
        if word in IRREGULAR_PAST or (word.endswith("ed") and len(word) > 4):
            return True
    return False


def implicit_subject(text: str, name: str) -> str | None:
    """'Gonna continue my edu' -> 'Caroline is going to continue my edu'; None if not."""
    words = text.split()
    if not words:
        return None
    first = words[0].lower().strip(",")
    rest = " ".join(words[1:])
    if first in _OPENING_ADVERBS and len(words) > 1:
        inner = implicit_subject(rest, name)
        if inner is None:
            return None
        predicate = inner[len(name) + 1 :]
        aux = _AUXILIARY_RE.match(predicate)
        if aux:  # "Still following ..." -> "X is still following ..."
            return f"{name} {aux[1]} {first} {predicate[aux.end() :]}"
        return f"{name} {first} {predicate}"
    following = [w.lower().strip(",.!") for w in words[1:]]
    if first == "going" and following[:1] == ["to"]:
        return f"{name} is {text[0].lower()}{text[1:]}"
    if first == "been":  # "Been busy" / "Been working on ...", not "(It's) been a while"
        nxt = following[0] if following else ""
        if nxt.endswith("ing") or nxt in EMOTION_ADJECTIVES or nxt == "busy":
            return f"{name} has been {rest}"
        return None
    if first in ("can't", "cannot", "can", "will"):
        return f"{name} {first} {rest}".rstrip()
    if first in EMOTION_ADJECTIVES and first not in ("so", "super", "really", "pretty", "very"):
        return f"{name} is {first} {rest}".rstrip()
    if first.endswith("ing") and first not in _NON_VERB_ING and len(first) > 4:
        if any(w in FINITE_VERBS for w in following) or _gerund_subject(following):
            return None  # a gerund subject: "Painting looks like ...", "Adding X fixed it"
        return f"{name} is {first} {rest}".rstrip()
    if (first in IRREGULAR_PAST or (first.endswith("ed") and len(first) > 4)) and (
        len(words) > 1 and words[1][:1].islower()
    ):
        return f"{name} {first} {rest}".rstrip()
    if first == "like" and following[:1] and following[0] in OBJECTS - {"it"}:
        return None  # a comparison: "Just like you with your tournament"
    if first in ("love", "loved", "like", "enjoy", "started", "finished", "tried"):
        return f"{name} {third_person(first)} {rest}".rstrip()
    return None
