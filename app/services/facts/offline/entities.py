"""Typed entities in a text: people, places, organisations, products, events, titles, dates.

What search links on, so precision comes first: a capitalised word is a name only with
evidence. Mid-sentence capitals are names unless they are ordinary words; a sentence's
first word needs more: it is a person of the conversation, a name the tenant already
knows, a word the same conversation capitalises mid-sentence, or a subject followed by
its verb ("Alice moved", not "Allows you to"). Shouted or code words ("DEFAULT",
"DELETE") are not names; short acronyms ("NASA", "LGBTQ") are. A name is typed by the
conversation's speakers first, then by what the tenant knows, then by word lists
(gazetteer.py) and the words just before it (names.py); what nothing settles is a thing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from app.services.facts.dates import MONTH_NAMES, WEEKDAY_NAMES
from app.services.facts.offline import gazetteer as gz
from app.services.facts.offline.lexicon import FILLER_WORDS, OBJECTS, STOPWORDS, word_set
from app.services.facts.offline.names import entity_type, find_names, is_common_word
from app.services.facts.offline.sentences import clean, split_sentences

EntityType = Literal["person", "place", "organization", "product", "date", "event", "work", "thing"]
ENTITY_TYPES: tuple[EntityType, ...] = (
    "person", "place", "organization", "product", "date", "event", "work", "thing",
)  # fmt: skip

MAX_ACRONYM = 5  # an all-capital word longer than this is shouting or code, not a name
# Words that, right after a sentence's first word, show it is a verb, not a subject
_NOT_AFTER_SUBJECT = OBJECTS | word_set("the a an your my our his their this that these those")
# All-capital words of code, markup and emphasis
_CODE_WORDS = word_set(
    """
    select insert update delete from where default null not and or true false create drop
    table index alter grant set get post put patch head json html http https url api sql
    css xml yaml todo note warning error info debug fixme tip faq asap fyi btw imo lol omg
    ok okay yes no
    """
)
# Instructions open sentences with a verb in its base form
_IMPERATIVES = word_set(
    """
    use add set make allow try check read go get let see keep run take give call create
    delete remove install open close start stop put send write ask tell find follow click
    select choose enable disable update change move copy paste save load build test note
    remember consider avoid enjoy visit join watch listen look feel stay
    """
)
_MONTHS = "|".join(MONTH_NAMES)
_TIME_WORDS = frozenset(w.lower() for w in (*WEEKDAY_NAMES, *MONTH_NAMES)) | word_set(
    "last next this every"
)
_DATE_RE = re.compile(
    rf"\b(?:\d{{1,2}}\s+(?:{_MONTHS})(?:\s+\d{{4}})?|(?:{_MONTHS})\s+\d{{1,2}}(?:st|nd|rd|th)?"
    rf"(?:,?\s+\d{{4}})?|(?:{_MONTHS})\s+\d{{4}}|(?:19|20)\d{{2}})\b"
)
# Where one works or learns, beyond names.py's cues: "started at X", "an internship with X"
_ORG_CUE_RE = re.compile(
    r"\b(?:started|starting|start|working|job|position|role|career|internship|interning"
    r"|volunteers?|volunteering|volunteered|enrolled|graduated\s+from)\s+(?:at|with|for|in)?"
    r"\s*(?:the\s+)?$",
    re.IGNORECASE,
)
# A title by the word for what it is: "the novel X", "X is my favourite book"
_WORKS = r"(?:book|novel|series|movie|film|show|song|album|game|play|musical|podcast|poem)s?"
_WORK_BEFORE_RE = re.compile(rf"\b{_WORKS}\s+(?:called\s+|named\s+|titled\s+)?$", re.I)
_WORK_AFTER_RE = re.compile(
    rf"^\s+(?:is|was)\s+(?:my|a|an|the|one\s+of\s+my)\s+(?:\w+\s+)?{_WORKS}\b", re.I
)
# A verb only a person is the subject of, right after a one-word name: "Gina works ..."
_HUMAN_VERB_RE = re.compile(
    r"^(?:'s\s+(?:mom|dad|mother|father|wife|husband|sister|brother|son|daughter|friend|kids?)"
    r"|\s+(?:said|says|told|tells|thinks|thought|feels|felt|loves|loved|wants|wanted|works"
    r"|worked|lives|lived|married|asked|asks|laughed|smiled|cried|knows|knew|and\s+I)\b)"
)
_NAME_BEFORE_RE = re.compile(r"\b(?!(?:in|of|since|by|from|until|to|and)\b)[A-Z][\w'-]*\s+$")
_QUOTED_RE = re.compile(r'"([A-Z][^"]{1,80})"')
_CAPITALISED_RE = re.compile(r"[A-Z][\w'&.+-]*(?:\s+(?:of\s+|the\s+)?[A-Z][\w'&.+-]*)*")
_WORD_RE = re.compile(r"[A-Za-z][\w'&.+-]*")


@dataclass(frozen=True)
class Mention:
    """One entity a text names: its name as written (a speaker's full name for a
    nickname), its type, and where it starts in the text given."""

    name: str
    type: EntityType
    offset: int

    @property
    def key(self) -> str:
        return entity_key(self.name)


def entity_key(name: str) -> str:
    """As app.services.graph.store.entity_key: case and runs of spaces do not count."""
    return " ".join(name.casefold().split())


def capitalised_evidence(texts: Iterable[str]) -> frozenset[str]:
    """Single words a text capitalises after a sentence's first word: the conversation's
    own evidence that a sentence-initial capital is a name too."""
    found: set[str] = set()
    for text in texts:
        for sentence in split_sentences(clean(text)):
            for m in _WORD_RE.finditer(sentence):
                word = m[0].rstrip(".").removesuffix("'s")
                capital = word[:1].isupper() and not word.isupper()
                if m.start() > 0 and capital and not is_common_word(word, initial=False):
                    found.add(word.lower())
    return frozenset(found)


def candidate_keys(texts: Iterable[str]) -> set[str]:
    """The keys of every capitalised span and word in texts: the names whose known type
    is worth looking up before recognising (a superset of what recognise finds)."""
    keys: set[str] = set()
    for text in texts:
        for m in _CAPITALISED_RE.finditer(text):
            words = m[0].split()
            keys.add(entity_key(m[0]))
            keys.update(entity_key(w) for w in words)
    return {k.removesuffix("'s") for k in keys if k}


def recognise(
    text: str,
    people: frozenset[str] = frozenset(),
    known: Mapping[str, str] | None = None,
    evidence: frozenset[str] = frozenset(),
) -> list[Mention]:
    """The entities text names, once each, in order of appearance.

    people: the conversation's speakers and authors (lower case): persons, and the full
    name a nickname stands for ("Mel" for Melanie). known: entity key to type, what the
    tenant already knows. evidence: capitalised_evidence of the conversation.
    """
    known = known or {}
    found: dict[str, Mention] = {}
    cleaned = clean(text)
    base = 0
    for sentence in _pieces(cleaned):
        start = cleaned.find(sentence, base)
        start = base if start < 0 else start
        base = start + len(sentence)
        for mention in _sentence_mentions(sentence, people, known, evidence):
            found.setdefault(
                mention.key, Mention(mention.name, mention.type, start + mention.offset)
            )
    return sorted(found.values(), key=lambda m: m.offset)


_LABEL_RE = re.compile(r"(?<=:)\s+(?=\S)|^\s*(?:[-*+]|\d+[.)])\s+|\*\*|__|`")


def _pieces(text: str) -> list[str]:
    """Sentences, a label's value ('Cascade: Allows ...') on its own: its first word opens
    a sentence too. Markdown emphasis and list marks are blanked, keeping offsets."""
    pieces: list[str] = []
    for sentence in split_sentences(text):
        blank = _LABEL_RE.sub(lambda m: "\n" * len(m[0]), sentence)
        pieces.extend(p for p in blank.split("\n") if p.strip())
    return pieces


def title_case(text: str) -> bool:
    """A quoted title, not a quoted sentence: at most 8 words, each longer than three
    letters capitalised ('The Great Gatsby'; not 'Let go of what no longer serves you')."""
    words = text.split()
    return 0 < len(words) <= 8 and all(w[:1].isupper() or len(w) <= 3 for w in words)


def _sentence_mentions(
    sentence: str, people: frozenset[str], known: Mapping[str, str], evidence: frozenset[str]
) -> list[Mention]:
    mentions: list[Mention] = []
    for m in _QUOTED_RE.finditer(sentence):
        title = m[1].strip(" ,.!?")
        if title_case(title):
            mentions.append(Mention(title, "work", m.start(1)))
    blank = _QUOTED_RE.sub(lambda m: " " * len(m[0]), sentence)
    for m in _DATE_RE.finditer(blank):
        if m[0].isdigit() and _NAME_BEFORE_RE.search(blank[: m.start()]):
            continue  # 'Cyberpunk 2077': part of a name
        mentions.append(Mention(m[0], "date", m.start()))
    dates = _DATE_RE.sub(lambda m: " " * len(m[0]), blank)
    for offset, found in find_names(dates, people | frozenset(known) | evidence):
        offset, name = _without_verb_opener(offset, found, people, known, evidence)
        if not name or not _is_name(dates, offset, name, people, known, evidence):
            continue
        full = _speaker_for(name, people)
        kind = "person" if full else _type_of(dates, offset, name, people, known)
        mentions.append(Mention(full or name, kind, offset))
    return mentions


def _evidenced(
    word: str, people: frozenset[str], known: Mapping[str, str], ev: frozenset[str]
) -> bool:
    """A word more than its capital says is a name: a person of the conversation, a name
    the tenant knows, a word the conversation capitalises mid-sentence, a listed name."""
    lower = word.lower()
    return (
        lower in people or lower in known or lower in ev or lower in gz.PLACES
        or lower in gz.FIRST_NAMES or lower in gz.PRODUCTS
    )  # fmt: skip


def _verb_like(word: str) -> bool:
    """A sentence's first word shaped like a verb: 'Allows', 'Used', 'Making', 'Use'."""
    lower = word.lower()
    if lower in _IMPERATIVES:
        return True
    if len(lower) > 3 and lower.endswith("s") and not lower.endswith(("ss", "'s", "us", "is")):
        return True
    return len(lower) > 4 and lower.endswith(("ed", "ing"))


def _without_verb_opener(
    offset: int, name: str, people: frozenset[str], known: Mapping[str, str], ev: frozenset[str]
) -> tuple[int, str]:
    """The span without a first word that opens the sentence as a verb ('Allows Postgres'
    is Postgres; 'Use ON DELETE' is nothing here); a word with evidence stays."""
    if offset > 0:
        return offset, name
    first, _, rest = name.partition(" ")
    if _evidenced(first, people, known, ev) or not _verb_like(first):
        return offset, name
    return (offset + len(first) + 1, rest) if rest else (offset, "")


def _is_name(
    text: str,
    offset: int,
    name: str,
    people: frozenset[str],
    known: Mapping[str, str],
    evidence: frozenset[str],
) -> bool:
    """Whether a capitalised span find_names kept is worth linking on."""
    lower = name.lower()
    if lower in people or entity_key(name) in known:
        return True
    words = name.split()
    if all(w.lower() in STOPWORDS or w.lower() in FILLER_WORDS for w in words):
        return False
    if any(w.lower() in _TIME_WORDS for w in words):
        return False  # 'Last Wednesday': a time, read by the date rules
    if len(words) == 1 and name.isupper():
        return len(name.rstrip("+")) <= MAX_ACRONYM and lower not in _CODE_WORDS
    if len(words) > 1 and all(w.isupper() for w in words):
        return False  # a shouted phrase or a code line
    if offset > 0 or len(words) > 1:
        return True
    # a sentence's first word, alone: a name only with more evidence than its capital
    # ('Pottery is ...', 'Never had ...' are not; 'Gina said ...' is)
    if _evidenced(name, people, known, evidence):
        return True
    return bool(_HUMAN_VERB_RE.match(text[offset + len(name) :]))


def _speaker_for(name: str, people: frozenset[str]) -> str | None:
    """The speaker a name stands for: the name itself, or a nickname that begins exactly
    one speaker's first name ('Mel' for Melanie)."""
    lower = name.lower()
    if lower in people:
        return name
    if " " in lower or len(lower) < 2:
        return None
    matches = [p for p in people if p.split()[0].startswith(lower) and p.split()[0] != lower]
    if len(matches) == 1:
        return " ".join(w.capitalize() for w in matches[0].split())
    return None


def _type_of(
    text: str, offset: int, name: str, people: frozenset[str], known: Mapping[str, str]
) -> EntityType:
    """person, place, organization, product, event or thing, by the strongest evidence."""
    key = entity_key(name)
    words = key.split()
    remembered = known.get(key)
    if remembered in ENTITY_TYPES and remembered != "thing":
        return remembered
    if key in gz.PLACES or key.removeprefix("the ") in gz.PLACES:
        return "place"
    if key in gz.EVENTS or (len(words) > 1 and words[-1] in gz.EVENT_HEADS):
        return "event"
    if len(words) > 1 and words[-1] in gz.ORGANIZATION_HEADS:
        return "organization"
    if words[0] in gz.ORGANIZATION_HEADS and len(words) > 2 and words[1] == "of":
        return "organization"  # University of Michigan
    if len(words) > 1 and words[-1] in gz.PLACE_HEADS:
        return "place"
    if key in gz.ORGANIZATIONS or _ORG_CUE_RE.search(text[max(0, offset - 40) : offset]):
        return "organization"
    if any(w in gz.PRODUCTS for w in words):
        return "product"
    if _WORK_BEFORE_RE.search(text[max(0, offset - 30) : offset]) or _WORK_AFTER_RE.match(
        text[offset + len(name) :]
    ):
        return "work"
    cued = entity_type(text, offset, name, people)
    if cued in ("person", "place", "organization"):
        return "person" if cued == "person" else "place" if cued == "place" else "organization"
    if len(words) == 1 and _HUMAN_VERB_RE.match(text[offset + len(name) :]):
        return "person"
    if words[0] in gz.FIRST_NAMES:
        return "person"
    before = text[max(0, offset - 12) : offset].lower().split()
    if before and before[-1] in gz.PRODUCT_CUE_WORDS:
        return "product"
    return "thing"


def question_entities(question: str) -> list[Mention]:
    """The entities a question names, by the same rules as ingest (no speakers known)."""
    return recognise(question)
