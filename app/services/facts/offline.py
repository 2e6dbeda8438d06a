"""Fact extraction without an LLM: sentence rules that run everywhere, instantly.

The default configuration has no language model, so these heuristics decide what
Elephant remembers. They aim for what an LLM extractor would produce on the easy
majority of turns: drop chit-chat, rewrite first-person statements as third-person
facts about the speaker ("I'm" -> "Caroline is"), resolve "you" to the other speaker,
replace relative dates by absolute ones, and attach the names the sentence mentions.
Everything is regex and word lists, so the output is deterministic and thousands of
turns take well under a second.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from app.services.facts.dates import (
    MONTH_NAMES,
    WEEKDAY_NAMES,
    DateMatch,
    find_dates,
    render_mention,
)
from app.services.facts.model import EntityRef, ExtractedFact, FactType, TurnInput

MAX_FACT_CHARS = 300

# --- lexicons (shared with app.services.scoring) ----------------------------------------


def _words(text: str) -> frozenset[str]:
    """A word list written as a block of text, so long lexicons stay readable."""
    return frozenset(text.split())


STOPWORDS = _words(
    """
    a an the and or but if then so of to in on at by for with about from into onto over
    after before up down out off as is am are was were be been being have has had having
    do does did doing will would can could should shall may might must i me my mine myself
    we us our ours ourselves you your yours yourself yourselves he him his himself she her
    hers herself it its itself they them their theirs themselves this that these those
    there here what which who whom whose when where why how not no nor too very just also
    only all any some such than each every more most much many other own same again still
    even ever now get gets got getting go goes going went gone make makes made im i'm it's
    that's i've i'd i'll we're we've we'll you're you've you'll don't didn't can't won't
    isn't wasn't doesn't haven't really gonna wanna gotta one lot lots bit kinda sorta yet
    while though although because since until both either neither way thing things
    something anything everything nothing someone anyone everyone somebody well back let
    let's there's here's what's he's she's they're they've its cause 'cause into via per
    perhaps however meanwhile unfortunately fortunately luckily sadly besides instead
    otherwise therefore thus hence plus overall apparently obviously basically
    """
)

FILLER_WORDS = _words(
    """
    hi hey hello hiya bye goodbye thanks thank thx ty ok okay k kk yes yeah yep yup yea no
    nope nah sure lol lmao rofl haha hahaha hahahaha hehe heh wow whoa woah omg oh ah aw
    aww awww hmm hmmm um uh great good cool nice awesome amazing wonderful fantastic
    incredible lovely sweet neat fun super totally absolutely definitely exactly agree
    agreed true right indeed glad congrats congratulations luck see talk soon later chat
    catch sounds sound looks seems cute brilliant perfect beautiful pretty quite anyway
    guess mean know stuff kind sort day time today tonight yesterday tomorrow sorry
    appreciate cheers welcome dear buddy friend pal mate guys man dude gosh jeez wish hope
    hopefully maybe inspiring impressive powerful stunning gorgeous special honestly
    seriously literally proud excited exciting kudos forward
    """
)

_WORD_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9'+\-]*")


def content_words(text: str) -> list[str]:
    """The words of text that carry information: no function words, no chit-chat."""
    words = []
    for raw in _WORD_RE.findall(text.replace("\u2019", "'")):
        word = raw.lower()
        if word.endswith("'s"):
            word = word[:-2]
        word = word.strip("'-")
        if word in STOPWORDS or word in FILLER_WORDS or word.split("'")[0] in STOPWORDS:
            continue
        if len(word) >= 3 or word.isdigit():
            words.append(word)
    return words


# --- text clean-up -----------------------------------------------------------------------

_EMOJI_RE = re.compile(
    "[\U0001f000-\U0001faff\u2600-\u27bf\ufe0f\u200d\u2b00-\u2bff]+|(?<!\\w)[:;]-?[()DPp](?!\\w)"
)
_SPACE_RE = re.compile(r"\s+")
_SENTENCE_END_RE = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\n+")
_ABBREVIATION_RE = re.compile(
    r"\b(?:Mr|Mrs|Ms|Dr|St|Jr|Sr|Prof|vs|etc|e\.g|i\.e|approx|No)\.$", re.IGNORECASE
)
_CLAUSE_SPLIT_RE = re.compile(
    r"\s+[-\u2013\u2014]+\s+|\s*;\s+|\s*\u2014\s*"
    r"|,?\s+(?:and|but|so|plus)\s+(?=(?:I|I'm|I've|I'd|I'll|we|we're|we've|we'll|it|it's"
    r"|that's|he|she|they|they're)\b)",
)
_INTERJECTION_RE = re.compile(
    r"^(?:(?:oh+|wow+|whoa|woah|yeah|yes|yep|yup|yea|well|hey+|hi|hello|haha\w*|hehe\w*|lol"
    r"|ah+|aw+|omg|ok|okay|no|nope|sure|true|right|exactly|absolutely|definitely|totally"
    r"|hmm+|um+|uh+|thanks|thank you|cool|nice|great|awesome|amazing|sweet|gosh|man|dude"
    r"|ha|hah|wait|honestly|oh my|oh wow|aww+|alright|agreed|indeed)\s*[,!.]+\s*"
    r"|(?:so|and|but|also|plus|btw|by the way|anyway|anyways|actually|honestly|now|then"
    r"|besides|oh and|well)[,]?\s+)+",
    re.IGNORECASE,
)
_TRAILING_NOISE_RE = re.compile(
    r"(?:,?\s+(?:lol|haha\w*|hehe\w*|xd|tho|though|too|as well)|,\s*which\s+(?:is|was)\s+"
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

# --- pronoun resolution ------------------------------------------------------------------

_ADVERBS = (
    r"(?:really|also|just|still|always|never|often|usually|actually|totally|finally|recently"
    r"|already|definitely|truly|sometimes|even|absolutely|honestly|kind\s+of|sort\s+of"
    r"|only|mostly|now|first|personally|currently|generally|especially|def|so|too)"
)
_LEAVE_VERBS = _words(
    """
    can could will would shall should may might must did didn't was wasn't had hadn't can't
    cannot couldn't won't wouldn't shouldn't mustn't used put set read cut hit let quit hurt
    cost beat spread shut bet and or but to not also never always to as if when because so
    who that which then once first the a an in on at for with of as myself personally alone
    got let
    """
)
_IRREGULAR_PAST = _words(
    """
    went saw got made took ran came gave found told thought felt left kept began brought
    bought caught taught built sent spent lost met paid said sat stood understood wrote
    drove rode ate drank swam sang began chose forgot fell flew grew knew threw wore won
    woke broke spoke stole froze hid held heard led lent meant slept fought sold became
    did had was were dealt dreamt learnt burnt spelt sold told lit fed fled bled struck
    stuck hung shook forgave overcame undertook tore sought
    """
)
_EMOTION_ADJECTIVES = _words(
    """
    excited thrilled happy glad stoked proud grateful thankful nervous scared worried tired
    exhausted stressed busy swamped blessed lucky interested inspired motivated determined
    pumped psyched keen sad upset bummed amazed surprised overwhelmed eager ready so super
    really pretty very sure hopeful curious relieved delighted honored honoured content
    obsessed hooked addicted
    """
)
# Words ending in -ing that are no verb: a sentence opening with one has no implicit
# subject ("During the week ..." must not become "Tom is during the week ...").
_NON_VERB_ING = _words(
    """
    something nothing anything everything thing king during according regarding including
    excluding notwithstanding pending morning evening wedding ceiling sibling
    """
)
_FINITE_VERBS = _words(
    """
    is was are were has have had looks seems sounds makes helps can will would could might
    should must does did gives keeps brings means feels takes lets gets becomes remains
    isn't wasn't aren't weren't doesn't didn't hasn't haven't can't won't
    """
)
_THIRD_PERSON = {
    "have": "has",
    "do": "does",
    "don't": "doesn't",
    "haven't": "hasn't",
    "are": "is",
    "aren't": "isn't",
    "were": "was",
    "weren't": "wasn't",
    "am": "is",
    "go": "goes",
}
_VERB_AFTER_RE = re.compile(rf"((?:\s+{_ADVERBS}\b)*)(\s+)([A-Za-z][a-z']*)")


_ING_VERBS = frozenset({"bring", "sing", "ring", "sting", "swing", "cling", "fling", "spring"})


def _third_person(verb: str) -> str:
    """Crude present-tense agreement for a verb that followed "I" or "you"."""
    lower = verb.lower()
    if lower in _THIRD_PERSON:
        return _THIRD_PERSON[lower]
    if (
        lower in _LEAVE_VERBS
        or lower in _IRREGULAR_PAST
        or (lower.endswith("ed") and not lower.endswith("eed"))
        or (lower.endswith("ing") and lower not in _ING_VERBS)
        or (lower.endswith("ly") and len(lower) > 5)
        or lower.endswith("'t")
        or verb != lower
    ):
        return verb
    if lower.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if len(lower) > 2 and lower.endswith("y") and lower[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


@dataclass(frozen=True)
class _Person:
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
_WE_TAILS = {"'re": " are", "'ve": " have", "'ll": " will", "'d": " would"}


def _resolve_pronouns(text: str, speaker: _Person, addressee: _Person | None) -> str:
    """Replace first-person (and, when known, second-person) pronouns by names."""

    def who(word: str) -> _Person | None:
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
            if verb and (word.lower() == "i" or _SUBJECT_SLOT_RE.search(text[: m.start()])):
                agreed = _third_person(verb[3])
                if agreed != verb[3]:
                    out.append(verb[1] + verb[2] + agreed)
                    pos = verb.end()
    out.append(text[pos:])
    return "".join(out)


_OPENING_ADVERBS = frozenset(
    {"really", "also", "finally", "totally", "actually", "recently", "still", "just", "always"}
)
_AUXILIARY_RE = re.compile(r"^(is|has|was|will|can|would)\s+")


def _implicit_subject(text: str, name: str) -> str | None:
    """'Gonna continue my edu' -> 'Caroline is going to continue my edu'; None if not."""
    words = text.split()
    if not words:
        return None
    first = words[0].lower().strip(",")
    rest = " ".join(words[1:])
    if first in _OPENING_ADVERBS and len(words) > 1:
        inner = _implicit_subject(rest, name)
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
        if nxt.endswith("ing") or nxt in _EMOTION_ADJECTIVES or nxt == "busy":
            return f"{name} has been {rest}"
        return None
    if first in ("can't", "cannot", "can", "will"):
        return f"{name} {first} {rest}".rstrip()
    if first in _EMOTION_ADJECTIVES and first not in ("so", "super", "really", "pretty", "very"):
        return f"{name} is {first} {rest}".rstrip()
    if first.endswith("ing") and first not in _NON_VERB_ING and len(first) > 4:
        if any(w in _FINITE_VERBS for w in following):
            return None  # a gerund subject: "Painting looks like ..."
        return f"{name} is {first} {rest}".rstrip()
    if (first in _IRREGULAR_PAST or (first.endswith("ed") and len(first) > 4)) and (
        len(words) > 1 and words[1][:1].islower()
    ):
        return f"{name} {first} {rest}".rstrip()
    if first in ("love", "loved", "like", "enjoy", "started", "finished", "tried"):
        return f"{name} {_third_person(first)} {rest}".rstrip()
    return None


# --- names -------------------------------------------------------------------------------

_NAME_RE = re.compile(
    r"\b(?:[A-Z][A-Za-z'\u2019&.-]*[A-Za-z+]|[A-Z]{2,}\+?|[A-Z])"
    r"(?:\s+(?:of\s+|de\s+|du\s+|van\s+|von\s+|the\s+)?(?:[A-Z][A-Za-z'\u2019&.-]*[A-Za-z+]"
    r"|[A-Z]{2,}\+?))*"
)
_NOT_NAMES = frozenset(
    {w.lower() for w in MONTH_NAMES}
    | set(WEEKDAY_NAMES)
    | {"i", "i'm", "i've", "i'd", "i'll", "ok", "okay", "mom", "dad", "god", "internet", "tv"}
)
_PLACE_CUE_RE = re.compile(
    r"\b(?:in|to|from|near|visited|visiting|visit|around|across|toward|towards|outside"
    r"|moved\s+to|lives\s+in|live\s+in|trip\s+to|flew\s+to|back\s+to)\s+(?:the\s+)?$",
    re.IGNORECASE,
)
_ORG_CUE_RE = re.compile(
    r"\b(?:works?\s+(?:at|for)|worked\s+(?:at|for)|working\s+(?:at|for)|joined|job\s+(?:at|with)"
    r"|employed\s+by|hired\s+by|intern(?:ship)?\s+at|studies\s+at|studied\s+at|study\s+at)"
    r"\s+(?:the\s+)?$",
    re.IGNORECASE,
)
_PERSON_CUE_RE = re.compile(
    r"\b(?:Mr|Mrs|Ms|Dr|friend|sister|brother|mother|father|mom|dad|son|daughter|husband"
    r"|wife|partner|boyfriend|girlfriend|cousin|aunt|uncle|grandma|grandpa|named|called"
    r"|kid|colleague|boss|coworker|neighbor|neighbour|mentor)\.?,?\s+$",
    re.IGNORECASE,
)


def _is_common_word(word: str, initial: bool) -> bool:
    """Whether a capitalised word is an ordinary word; sentence openers are judged harder."""
    lower = word.lower().removesuffix("'s")
    if lower in STOPWORDS or lower in FILLER_WORDS or lower in _NOT_NAMES:
        return True
    if "'" in lower and lower.split("'")[0] in STOPWORDS:
        return True
    return initial and (
        lower.endswith(("ing", "ly", "ed"))
        or lower in _IRREGULAR_PAST
        or lower in _EMOTION_ADJECTIVES
        or lower in _COMMON_OPENERS
    )


_COMMON_OPENERS = _words(
    """
    love like painting music nature family life art work school kids being taking making
    having seeing finding getting playing reading writing running going thinking feels seems
    looks sounds makes reminds hope gotta wish
    """
)


_NAME_VERB_RE = re.compile(
    r"^(?:'s\b|\s+(?:is|was|has|had|does|did|can|could|will|would|should|must|might|may"
    r"|said|says|went|got|made|took|came|gave|found|told|became|seems|just|also|really)\b"
    r"|\s+and\s+[A-Z]|\s+[a-z]+(?<!ss)s\b|\s+[a-z]{2,}ed\b)"
)


def _opener_is_name(word: str, after: str, people: frozenset[str]) -> bool:
    """A sentence-initial capitalised word is a name if a verb follows it like a subject.

    'Alice lives ...', 'Max must ...', "Aragorn's story": yes; 'Funny photo',
    'Weddings are ...': no.
    """
    if word.lower() in people:
        return True
    if _is_common_word(word, initial=True):
        return False
    return word.isupper() or word.endswith("'s") or bool(_NAME_VERB_RE.match(after))


def _names(text: str, people: frozenset[str] = frozenset()) -> list[tuple[int, str]]:
    """Capitalised names with their offsets; a sentence-initial common word is not one."""
    found: list[tuple[int, str]] = []
    for m in _NAME_RE.finditer(text):
        words = m[0].split()
        start = m.start()
        if (
            start == 0
            and len(words) == 1
            and not _opener_is_name(words[0], text[m.end() :], people)
        ):
            continue
        while words and _is_common_word(words[0], initial=start == 0):
            start = text.index(words[0], start) + len(words[0])
            words = words[1:]
            if words:
                start = text.index(words[0], start)
        while words and words[-1].lower() in ("of", "de", "the", "du", "van", "von"):
            words = words[:-1]
        if not words:
            continue
        name = re.sub(r"['\u2019]s$", "", " ".join(words)).rstrip(".")
        if len(name) < 2 or name.lower() in _NOT_NAMES:
            continue
        found.append((start, name))
    return found


def _entity_type(text: str, offset: int, name: str, people: frozenset[str]) -> str:
    if name.lower() in people or name.split()[0].lower() in people:
        return "person"
    before = text[max(0, offset - 40) : offset]
    if _PERSON_CUE_RE.search(before):
        return "person"
    if _ORG_CUE_RE.search(before):
        return "organization"
    if _PLACE_CUE_RE.search(before):
        return "place"
    return "thing"


def _leading_name(text: str, people: frozenset[str] = frozenset()) -> str | None:
    """The name a sentence opens with ('Alice' in 'Alice lives in Paris'), if any."""
    m = _NAME_RE.match(text)
    if not m:
        return None
    words = m[0].split()
    if len(words) == 1 and not _opener_is_name(words[0], text[m.end() :], people):
        return None
    if _is_common_word(words[0], initial=True):
        return None
    return re.sub(r"['\u2019]s$", "", m[0]).strip()[:200]


# --- dates -------------------------------------------------------------------------------

_PREPOSITION_BEFORE_RE = re.compile(
    r"\b(?:on|in|since|until|till|by|from|before|after|during|of|around|at|for|through)\s+$",
    re.IGNORECASE,
)
_DIGIT_RE = re.compile(r"\d")
_YEAR_IN_PHRASE_RE = re.compile(r"\b\d{4}\b|\d{4}-")


def _recurring(match: DateMatch) -> bool:
    """'14 March' without a year: likely a birthday or anniversary, so leave it alone."""
    phrase = match.mention.phrase
    return (
        match.mention.relative
        and (match.mention.end - match.mention.start).days == 1
        and bool(_DIGIT_RE.search(phrase))
        and not _YEAR_IN_PHRASE_RE.search(phrase)
        and any(month.lower()[:3] in phrase.lower() for month in MONTH_NAMES)
    )


# What follows a sentence-opening date phrase when the phrase is an adverbial and not
# the subject: "Last week, I ...", "Yesterday Tom ...", but not "Today is ...".
_CLAUSE_AFTER_DATE_RE = re.compile(
    r"\s*,\s*\S|\s+(?:[A-Z]|(?:we|he|she|they|it|there|you|my|our|his|her|their|your|the"
    r"|a|an)\b)"
)  # used with .match(text, pos), so no ^
# ...and when it is the subject: "Today is my birthday", "Last week was busy".
_DATE_AS_SUBJECT_RE = re.compile(
    r"'s\b|\s+(?:is|was|will|would|has|had|seems|seemed|looks|looked|sounds|sounded|feels"
    r"|felt|must|should|could|can|might|may)\b"
)


def _rewrite_dates(text: str, anchor: datetime | None) -> tuple[str, datetime | None]:
    """Relative date phrases replaced by absolute ones, and the first event date.

    A sentence that opens with its date says it at the end instead ("Last week I
    adopted Rex" -> "I adopted Rex during the week of 29 January 2024"), so the
    pronoun and implicit-subject rules see the clause's real first word; a date that
    is the subject loses its preposition ("Today is ..." -> "5 February 2024 is ...").
    """
    matches = [m for m in find_dates(text, anchor) if not _recurring(m)]
    event: datetime | None = matches[0].mention.start if matches else None
    out: list[str] = []
    pos = 0
    trailer = ""
    for match in matches:
        mention = match.mention
        if not mention.relative:
            continue
        replacement = render_mention(mention)
        if match.begin == 0 and _CLAUSE_AFTER_DATE_RE.match(text, match.stop):
            trailer, pos = replacement, match.stop
            continue
        bare = (match.begin == 0 and _DATE_AS_SUBJECT_RE.match(text, match.stop)) or (
            _PREPOSITION_BEFORE_RE.search(text[: match.begin])
        )  # "since last year" -> "since 2022", not "since in 2022"
        if bare and not replacement.startswith("around "):
            replacement = replacement.split(" ", 1)[1]
        out.append(text[pos : match.begin] + replacement)
        pos = match.stop
    out.append(text[pos:])
    rewritten = "".join(out)
    if trailer:
        rewritten = _append_to_first_clause(rewritten.strip(" ,").rstrip(" .!;:"), trailer)
    return rewritten, event


def _append_to_first_clause(text: str, phrase: str) -> str:
    """phrase at the end of text's first clause: 'I went to a fair on 24 April 2023, it was
    great'. A comma within the first four words lists names ('John, Maria and I ...')."""
    for comma in re.finditer(r",\s", text):
        if len(text[: comma.start()].split()) >= 4:
            return f"{text[: comma.start()]} {phrase}{text[comma.start() :]}"
    return f"{text} {phrase}"


# --- sentences ---------------------------------------------------------------------------


def _sentences(text: str) -> list[str]:
    pieces = [p for p in _SENTENCE_END_RE.split(text) if p and p.strip()]
    merged: list[str] = []
    for piece in pieces:
        if merged and _ABBREVIATION_RE.search(merged[-1]):
            merged[-1] = f"{merged[-1]} {piece}"
        else:
            merged.append(piece)
    return [s.strip() for s in merged]


def _clean(text: str) -> str:
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"')
    text = _EMOJI_RE.sub(" ", text.replace("\u201d", '"'))
    return _SPACE_RE.sub(" ", text).strip()


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


def _key(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def _finish(text: str) -> str:
    text = _SPACE_RE.sub(" ", text).strip(" \t,;:-\u2013\u2014").rstrip(" .!?,;:")
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
    if first == "I" or first.isupper() or _leading_name(text) is not None:
        return text
    return text[:1].lower() + text[1:]


def _confidence(text: str, reported: bool, implicit: bool) -> float:
    words = len(text.split())
    value = 0.8 - max(0, words - 15) * 0.01 - (0.05 if reported else 0) - (0.05 if implicit else 0)
    return round(min(0.8, max(0.6, value)), 2)


@dataclass(frozen=True)
class _Context:
    speaker: _Person | None  # for a note: its author, who "I" is
    addressee: _Person | None
    people: frozenset[str]
    anchor: datetime | None
    turn_id: str | None
    note: bool = False  # a note: nothing in it is reported speech or said to anyone


def _as_utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


def _clause_fact(clause: str, ctx: _Context) -> ExtractedFact | None:
    text = _INTERJECTION_RE.sub("", clause).strip(" ,")
    text = _strip_vocatives(text, ctx.people)
    text = _TRAILING_NOISE_RE.sub("", text.rstrip(" .!,;:")).strip().rstrip(" .!,;:")
    if not text or text.endswith("?"):
        return None
    for pattern, replacement in _SLANG:
        text = pattern.sub(replacement, text)
    first_person = ctx.speaker is not None and bool(_FIRST_PERSON_RE.search(text))
    spoken = ctx.speaker is not None and not ctx.note
    if spoken and (_SKIP_OPENER_RE.match(text) or (not first_person and _REACTION_RE.match(text))):
        return None
    informative = [w for w in content_words(text) if w not in ctx.people]
    vague = spoken and not first_person and _PRONOUN_OPENER_RE.match(text)
    dated, event = _rewrite_dates(text, ctx.anchor)
    # a dated event is worth keeping even when short: "I visited her yesterday"
    needed = (3 if vague else 2) - (event is not None and dated != text)
    if len(informative) < needed:
        return None

    who = _attribute(dated, first_person, ctx)
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
    if who.reported and ctx.speaker is not None:
        body = f"{ctx.speaker.name} said {_lower_first(body)}"
    body = _finish(body)
    if not body:
        return None

    return ExtractedFact(
        text=body,
        subject=who.subject,
        entities=entities,
        fact_type=who.fact_type,
        valid_from=_as_utc(event if event is not None else ctx.anchor),
        confidence=_confidence(body, who.reported, who.implicit),
        source_turn_ids=[ctx.turn_id] if ctx.turn_id else [],
    )


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


def _attribute(dated: str, first_person: bool, ctx: _Context) -> _Attribution:
    """First person becomes the speaker (a note's author); other statements keep their
    own subject, and in a conversation are reported as the speaker's words."""
    if ctx.speaker is None:
        subject = _leading_name(dated, ctx.people)
        return _Attribution(dated, dated, subject, "world", False, False, False)
    name = ctx.speaker.name
    lead = _implicit_subject(dated, name)
    if lead is not None:
        dated, first_person = lead, True
    body = _resolve_pronouns(dated, ctx.speaker, ctx.addressee)
    if first_person:
        reported = not ctx.note and not re.search(rf"\b{re.escape(name)}\b", body)
        return _Attribution(dated, body, name, "experience", reported, lead is not None, True)
    subject = _leading_name(dated, ctx.people)  # before "you" became a name
    if ctx.note:  # a note about someone else: "Alice moved to Berlin"
        return _Attribution(dated, body, subject, "world", False, False, False)
    return _Attribution(dated, body, subject or name, "world", subject is None, False, False)


_QUOTED_RE = re.compile(r'"([^"]{2,80})"|(?<!\w)\'([A-Z][^\']{1,80})\'(?!\w)')


def _entities(text: str, ctx: _Context, speaker: _Person | None) -> list[EntityRef]:
    """The speaker (if the fact involves them), then every name in text, typed by the
    words just before it."""
    entities: list[EntityRef] = []
    seen: set[str] = set()
    if speaker is not None:
        entities.append(EntityRef(name=speaker.name, type="person"))
        seen.add(speaker.name.lower())
    for m in _QUOTED_RE.finditer(text):
        title = (m[1] or m[2]).strip(" ,.!?")
        if title and title.lower() not in seen:
            seen.add(title.lower())
            entities.append(EntityRef(name=title, type="thing"))
    unquoted = _QUOTED_RE.sub(lambda m: " " * len(m[0]), text)
    for offset, found in _names(unquoted, ctx.people):
        if found.lower() in seen or len(found) > 200:
            continue
        seen.add(found.lower())
        entities.append(EntityRef(name=found, type=_entity_type(text, offset, found, ctx.people)))
    return entities


def _person(name: str | None) -> _Person | None:
    if not name or not name.strip():
        return None
    name = name.strip()[:200]
    return _Person(name, f"{name} and others")


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


def extract_offline(
    turns: Sequence[TurnInput], session_date: datetime | None
) -> list[ExtractedFact]:
    """Facts from a conversation (or notes) by rules alone; deterministic and de-duplicated.

    The anchor for relative dates is each turn's timestamp, else the session date.
    A note (speaker None) with an author attributes its first-person sentences to
    the author.
    """
    people = frozenset(
        name.lower() for t in turns for name in (t.speaker, t.author) if name and name.strip()
    )
    facts: list[ExtractedFact] = []
    index_of: dict[str, int] = {}
    for turn, other in zip(turns, _addressees(turns), strict=True):
        ctx = _Context(
            speaker=_person(turn.speaker) or _person(turn.author),
            addressee=_person(other) if turn.speaker else None,
            people=people,
            anchor=turn.timestamp or session_date,
            turn_id=turn.turn_id,
            note=not turn.speaker,
        )
        for sentence in _sentences(_clean(turn.text)):
            if sentence.rstrip().endswith("?"):
                continue
            for clause in _CLAUSE_SPLIT_RE.split(sentence):
                fact = _clause_fact(clause, ctx) if clause else None
                if fact is None:
                    continue
                key = _key(fact.text)
                if key in index_of:
                    earlier = facts[index_of[key]]
                    ids = earlier.source_turn_ids + [
                        t for t in fact.source_turn_ids if t not in earlier.source_turn_ids
                    ]
                    facts[index_of[key]] = earlier.model_copy(update={"source_turn_ids": ids})
                    continue
                index_of[key] = len(facts)
                facts.append(fact)
    return facts
