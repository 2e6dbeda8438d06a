"""Text cut into sentences and clauses, and the clause stripped of small talk.

Owns the clean-up before a clause is rewritten: emoji and typographic quotes out,
sentence and clause boundaries, interjections, trailing noise, slang and vocatives
dropped, and the openers that mark a clause as chit-chat aimed at the listener.
"""

from __future__ import annotations

import re

from app.services.facts.offline.grammar import finite_verb
from app.services.facts.offline.lexicon import SPACE_RE
from app.services.facts.offline.names import is_common_word

# --- text clean-up -----------------------------------------------------------------------

_EMOJI_RE = re.compile(
    "[\U0001f000-\U0001faff\u2600-\u27bf\ufe0f\u200d\u2b00-\u2bff]+|(?<!\\w)[:;]-?[()DPp](?!\\w)"
)

_SENTENCE_END_RE = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\n+")
_ABBREVIATION_RE = re.compile(
    r"\b(?:Mr|Mrs|Ms|Dr|St|Jr|Sr|Prof|vs|etc|e\.g|i\.e|approx|No)\.$", re.IGNORECASE
)
_CLAUSE_SPLIT_RE = re.compile(
    r"\s+[-\u2013\u2014]+\s+|\s*;\s+|\s*\u2014\s*"
    r"|,?\s+(?:and|but|so|plus)\s+(?=(?:I|I'm|I've|I'd|I'll|we|we're|we've|we'll|it|it's"
    r"|that's|he|she|they|they're)\b)"
    r"|,\s+(?=(?:he|she|they)\s+(?!and\b|or\b)[a-z]+\b)",  # a comma splice: ", she sells"
)
_INTERJECTION_RE = re.compile(
    r"^(?:(?:oh+|wow+|whoa|woah|yeah|yes|yep|yup|yea|well|hey+|hi|hello|haha\w*|hehe\w*|lol"
    r"|ah+|aw+|omg|ok|okay|no|nope|sure|true|right|exactly|absolutely|definitely|totally"
    r"|hmm+|um+|uh+|thanks|thank you|cool|nice|great|awesome|amazing|sweet|gosh|man|dude"
    r"|ha|hah|wait|honestly|oh my|oh wow|aww+|alright|agreed|indeed|perfect|noted"
    r"|guess what|good news|fun fact)\s*[,!.]+\s*"
    r"|(?:so|and|but|also|plus|btw|by the way|anyway|anyways|actually|honestly|now|then"
    r"|besides|oh and|well)[,]?\s+)+",
    re.IGNORECASE,
)
_TRAILING_NOISE_RE = re.compile(
    r"(?:,?\s+(?:lol|haha\w*|hehe\w*|xd|tho|though|too|as well)"
    r"|,\s*(?:sadly|unfortunately|honestly|thankfully|luckily|thanks|thank you)"
    r"|(?<!\bback)(?<!\bsince)(?<!\buntil)(?<!\btill)(?<!\bby)(?<!\band)\s+then"
    r"|,\s*which\s+(?:is|was)\s+"
    r"(?:so\s+|pretty\s+|really\s+|very\s+|super\s+|kinda\s+)*\w+)\s*$",
    re.IGNORECASE,
)
_SLANG = (
    (re.compile(r"\bgonna\b", re.IGNORECASE), "going to"),
    (re.compile(r"\bwanna\b", re.IGNORECASE), "want to"),
    (re.compile(r"\bgotta\b", re.IGNORECASE), "have to"),
    (re.compile(r"\bkinda\b", re.IGNORECASE), "kind of"),
    (re.compile(r"\bthinkin'", re.IGNORECASE), "thinking"),
    (re.compile(r"(?<!\w)'cause\b", re.IGNORECASE), "because"),
)
# Openers of sentences aimed at the listener or the moment: advice, thanks, praise.
_SKIP_OPENER_RE = re.compile(
    r"^(?:(?:just|also|really|definitely|totally|so|oh|and|please)\s+)*"
    r"(?:you|your|you're|you've|you'll|you'd|yours|let's|let|lets|keep|take|check|look"
    r"|enjoy|stay|remember|imagine|don't|do|have|congrats|congratulations|thanks|thank"
    r"|cheers|sorry|good|bye|see|talk|hope|hopefully|wish|same|me too|what a|how"
    r"|is|are|can|could|would|should|will|did|does|was|were|tell|give"
    r"|happy|welcome|please|glad|nice|great|cool|awesome|so glad|sounds|looks|seems"
    r"|such|here's to|good luck|best|all the best|feel free|go|try|make sure"
    r"|way to|well done|must|isn't|aren't|wasn't|didn't|doesn't|hasn't|haven't"
    r"|no worries|no problem|not bad|fingers crossed|bet|which|even if|even though|if|unless"
    r"|because|although"
    r"|though|whether|as if)\b",
    re.IGNORECASE,
)
_REACTION_RE = re.compile(
    r"^(?:\S+\s+){0,4}(?:sounds|looks|seems|sounded|looked|seemed)\s+(?:like\s+)?"
    r"(?:so\s+|really\s+|very\s+|super\s+|pretty\s+|such\s+|a\s+|an\s+)*"
    r"(?:great|amazing|awesome|cool|fun|nice|lovely|wonderful|fantastic|beautiful|incredible"
    r"|good|perfect|exciting|interesting|peaceful|relaxing|delicious|tough|hard|like\b)",
    re.IGNORECASE,
)
# Liking what was just shown or said: "I love that name", "I really like your photo".
_LIKING_THAT_RE = re.compile(
    r"^I\s+(?:\w+ly\s+|just\s+|so\s+)?(?:love|like|adore|loved|liked|enjoyed)\s+"
    r"(?:that|your)(?:\s+\S+)?$",
    re.IGNORECASE,
)
_PRONOUN_OPENER_RE = re.compile(
    r"^(?:it|it's|its|it'll|it'd|that|that's|that'll|this|this's|they|they're|they'll|they'd"
    r"|there|there's|he|he's|he'll|she|she's|she'll|these|those|life|life's)\b",
    re.IGNORECASE,
)
_FIRST_PERSON_RE = re.compile(
    r"\b(?:I|I'm|I've|I'd|I'll|me|my|mine|myself|we|we're|we've|we'll|we'd|us|our|ours"
    r"|ourselves)\b",
    re.IGNORECASE,
)


# --- sentences ---------------------------------------------------------------------------


def split_sentences(text: str) -> list[str]:
    pieces = [p for p in _SENTENCE_END_RE.split(text) if p and p.strip()]
    merged: list[str] = []
    for piece in pieces:
        if merged and _ABBREVIATION_RE.search(merged[-1]):
            merged[-1] = f"{merged[-1]} {piece}"
        else:
            merged.append(piece)
    return [s.strip() for s in merged]


def clean(text: str) -> str:
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"')
    text = _EMOJI_RE.sub(" ", text.replace("\u201d", '"'))
    return SPACE_RE.sub(" ", text).strip()


_LEADING_VOCATIVE_RE = re.compile(r"^(?:(?i:hey|hi|hello|dear|yo)\s+)?([A-Z][a-z]+)\s*[,!.]\s*")


def _strip_vocatives(text: str, people: frozenset[str]) -> str:
    """Remove 'Caroline,' at the start and ', Mel' at the end: addressing, not content."""

    def is_person(word: str) -> bool:
        lower = word.lower()
        return lower in people or any(len(lower) >= 3 and p.startswith(lower) for p in people)

    m = _LEADING_VOCATIVE_RE.match(text)
    if m and is_person(m[1]):
        text = text[m.end() :]
    m = re.search(r"[,\s]\s*([A-Z][a-z]+)\s*([.!?]*)$", text)
    if m and is_person(m[1]) and (text[m.start()] == "," or not text[: m.start()].strip()):
        text = text[: m.start()] + m[2]
    return text.strip()


def split_clauses(sentence: str) -> list[str]:
    """The sentence split at clause boundaries; a piece without a verb stays with the
    next ('Gina and I are getting married' is one clause, not 'Gina' + 'I are ...')."""
    pieces: list[str] = []
    pos = 0
    carry = ""
    for m in _CLAUSE_SPLIT_RE.finditer(sentence):
        piece = sentence[pos : m.start()]
        pos = m.end()
        if m[0].strip() == "and" and _coordinated_subject(piece):  # "Gina and I"
            carry += piece + m[0]
            continue
        pieces.append(carry + piece)
        carry = ""
    pieces.append(carry + sentence[pos:])
    return pieces


def _coordinated_subject(piece: str) -> bool:
    """A name or 'my partner': the first half of a subject like 'Gina and I'."""
    words = piece.split()
    if not words or len(words) > 3 or finite_verb(piece) is not None:
        return False
    if words[0].lower() in ("my", "our", "his", "her", "their", "the"):
        return True
    return all(w[:1].isupper() for w in words) and not is_common_word(words[0], initial=True)


# --- one clause: tidied, and recognised as small talk ------------------------------------


def tidy(clause: str, people: frozenset[str]) -> str:
    """The clause without interjections, vocatives and trailing noise ('lol', 'then')."""
    text = _INTERJECTION_RE.sub("", clause.lstrip(" .\u2026")).strip(" ,")
    text = _strip_vocatives(text, people)
    return _TRAILING_NOISE_RE.sub("", text.rstrip(" .!,;:")).strip().rstrip(" .!,;:")


def unslang(text: str) -> str:
    """'gonna' -> 'going to', 'kinda' -> 'kind of', ''cause' -> 'because'."""
    for pattern, replacement in _SLANG:
        text = pattern.sub(replacement, text)
    return text


def in_first_person(text: str) -> bool:
    """Whether the clause says 'I', 'my', 'we', 'us', ..."""
    return bool(_FIRST_PERSON_RE.search(text))


def small_talk(text: str, first_person: bool) -> bool:
    """Advice, thanks, praise or a reaction to what was just said: nothing to remember."""
    return bool(
        _SKIP_OPENER_RE.match(text)
        or _LIKING_THAT_RE.match(text)
        or (not first_person and _REACTION_RE.match(text))
    )


def pronoun_opener(text: str) -> bool:
    """Whether the clause opens with 'it', 'that', 'they', ...: vague without context."""
    return bool(_PRONOUN_OPENER_RE.match(text))
