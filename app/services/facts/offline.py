"""Fact extraction without an LLM: sentence rules that run everywhere, instantly.

The default configuration has no language model, so these heuristics decide what
Elephant remembers. They aim for what an LLM extractor would produce on the easy
majority of turns: drop chit-chat, rewrite first-person statements as third-person
facts about the speaker ("I'm" -> "Caroline is"), resolve "you" to the other speaker,
replace relative dates by absolute ones, and attach the names the sentence mentions.
A fact is a whole sentence (a subject, a finite verb, no dangling end), one per claim;
markdown layout (headings, list labels, code, tables, links) is never one. An
assistant's turn gives only its concrete statements, marked as the assistant's and
trusted less. Everything is regex and word lists, so the output is deterministic and
thousands of turns take well under a second.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from app.config import DEFAULT_ASSISTANT_SPEAKERS
from app.services.facts.dates import (
    MONTH_NAMES,
    WEEKDAY_NAMES,
    DateMatch,
    find_dates,
    render_mention,
)
from app.services.facts.model import Assistants, EntityRef, ExtractedFact, FactType, TurnInput

MAX_FACT_CHARS = 300

# --- lexicons (shared with app.services.gate.scoring) ----------------------------------------


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
# Words that are a finite verb wherever they stand (with _FINITE_VERBS, _IRREGULAR_PAST
# and the third-person forms below): a clause needs one after its subject.
_VERB_WORDS = _words(
    """
    am be do done says goes knows wants needs likes loves lives works uses costs runs
    shall may i'm i've i'd i'll we're we've we'll we'd you're you've you'll you'd they're
    they've they'll they'd he's she's it's that's there's here's what's who's he'll she'll
    it'll that'll he'd she'd it'd
    """
)
_BASE_VERB_STOPWORDS = _words("make get go let do have")
_THE_MY = _words("the my our his her their")
_DETERMINERS = _THE_MY | _words("a an this that these those each every its your")
_ADVERB_WORDS = frozenset(re.findall(r"[a-z]+", _ADVERBS)) - {"kind", "sort", "of"}
_SUBJECT_PRONOUNS = frozenset({"i", "we", "you", "they"})  # a base-form verb may follow
# Words after which an "-s" or "-ed" word is a noun or an adjective, not a verb.
_NOMINAL_BEFORE = _words(
    """
    a an the my your his her its our their this that these those some any no every each
    all both many few several more most other another such what which whose of for with
    in on at by to from into onto about over under after before during without between
    per via than and or one two three four five six seven eight nine ten twelve twenty
    dozen hundred thousand few
    """
)
# Bare verbs that open an instruction: "Buy the ticket", "Run the backup".
_IMPERATIVE_VERBS = _words(
    """
    add aim apply ask avoid book bookmark bring buy call check choose click close commit
    compare configure consider contact copy create delete deploy disable download drink drop
    eat enable ensure enter explore fill find fly follow get give go grab head install join
    keep leave let look make merge mix note open order pack paste pay pick plan plug prepare
    press print pull push put read register remember remove rent replace reserve restart run
    save search see select send set share sign skip sort start stay store swap switch take
    tell test trim try turn type unplug update upgrade use verify visit walk watch wear write
    """
)
_LEADING_SUBCLAUSE_RE = re.compile(
    r"^(?:since|because|as|when|if|once|after|before|while|unless)\b[^,]{0,80},\s*",
    re.IGNORECASE,
)
# Words no sentence ends on: "... and", "... the", "... because".
_ALWAYS_DANGLING = _words("a an the and or but nor because if than whose my your our their")
# Words a sentence cut off with "..." stops on ("I have to tell you about...").
_CUT_DANGLING = _ALWAYS_DANGLING | _words(
    """
    so yet as that which who whom when while where whether his her its this these those
    some any every each no with about to of for from in on at by into onto upon like via
    per through toward towards among between without is are was were be been being has
    have had do does did will would can could should shall might must am very really just
    also not
    """
)
# Prepositions that need an object after a name or a pronoun: "tell Gina about", "likes
# Nate with" (but "cheer Jon on", "let them in" are whole).
_OBJECT_PREPOSITIONS = _words("with about to of for from at by into")
_OBJECTS = _words("him her them us me you it")


def _tokens(text: str) -> list[str]:
    return [w.lower() for w in _WORD_RE.findall(text.replace("\u2019", "'"))]


def _verb_at(words: list[str], raw: list[str], index: int, strict: bool = False) -> bool:
    """Whether words[index] (raw: as written) is a finite verb after a subject."""
    word = words[index]
    if word in _VERB_WORDS or word in _FINITE_VERBS or word in _IRREGULAR_PAST:
        return True
    if word in _THIRD_PERSON.values() or word.endswith("n't"):
        return True
    if (word in STOPWORDS and word not in _BASE_VERB_STOPWORDS) or not raw[index][:1].islower():
        return False
    subject = index - 1  # the subject's last word: "we (all) need", "I really enjoy"
    while subject > 0 and (words[subject] in _ADVERB_WORDS or words[subject] in ("all", "both")):
        subject -= 1
    if words[subject] in _SUBJECT_PRONOUNS:
        return True
    before = words[index - 1]
    if before in _NOMINAL_BEFORE:  # "the required fields", "for retries"
        return False
    if word.endswith("ed") and len(word) > 3:
        return True
    last = index == len(words) - 1
    if (
        word.endswith("s")
        and not word.endswith(("ss", "us", "is", "'s"))
        and len(word) > 2
        and not before[:1].isdigit()  # "30 minutes", "two hours": a quantity
        and (not last or (index >= 2 and not strict))  # "every step counts"; "Light layers"
        and (last or words[index + 1] not in ("and", "or"))
        # a list item: "The JR Pass costs", "Render's tier spins", not "Business hotels near"
        and (not strict or words[0] in _DETERMINERS or words[0].endswith("'s"))
    ):
        return True
    # a base form after a plural subject: "The colors make", "Creativity and family keep"
    gerund = word.endswith("ing") and word not in _ING_VERBS
    if gerund or word.endswith(("s", "ly")) or not word.isalpha():
        return False
    noun = words[subject]
    plural = noun.endswith("s") and not noun.endswith(("ss", "us", "'s"))
    opener = subject == 0 or words[subject - 1] in _NOMINAL_BEFORE
    if plural and opener:
        return True
    # "family and moments make", "Creativity and the kids keep"
    return not strict and (
        words[subject - 1 : subject] == ["and"]
        or (words[subject - 2 : subject - 1] == ["and"] and words[subject - 1] in _THE_MY)
    )


def _finite_verb(text: str, strict: bool = False) -> int | None:
    """Index of the clause's first finite verb after its subject; None if it has none.

    Word lists, not a parser: "Alice lives in Paris", "We deploy on Render" and
    "Trains leave every 30 minutes" have one; "Street food in Dotonbori", "Light
    layers and a rain jacket" and "Buy the ticket at the office" do not. strict (list
    items): the verb comes within six words, with no comma before it ("quartz,
    ordered from ..." is a label's value, not a clause).
    """
    raw = _WORD_RE.findall(text.replace("\u2019", "'"))
    words = [w.lower() for w in raw]
    lead = _LEADING_SUBCLAUSE_RE.match(text)  # "Since you need to be back, fly home ..."
    if _imperative(words) or (lead and _imperative(_tokens(text[lead.end() :]))):
        return None
    if words and "'" in words[0] and words[0] in _VERB_WORDS:
        return 0  # subject and verb in one: "I'm", "We're", "It's"
    for index, word in enumerate(words[:5]):  # "Oliver's hilarious", "Sam's been busy"
        if word.endswith("'s") and index + 1 < len(words) and _is_after(words[index + 1]):
            return index
    for index in range(1, len(words)):
        if strict and index > 6:
            return None
        if _verb_at(words, raw, index, strict):
            if strict and "," in text[: text.find(raw[index])]:
                return None
            return index
    return None


_IS_AFTER = _words(
    """
    a an the so very really such super pretty not always never been got gone just still
    also too quite going gonna in at on from like one my our your his her their all
    """
)


def _is_after(word: str) -> bool:
    """Whether word follows "'s" = "is"/"has" ("Oliver's hilarious"), not a possessive."""
    return (
        word in _IS_AFTER
        or word in _EMOTION_ADJECTIVES
        or word.endswith(("ing", "ed", "ous", "ful", "ive", "able", "ible"))
    )


def _imperative(words: list[str]) -> bool:
    """An instruction without a subject: 'Buy the ticket', 'Use tenacity for retries'."""
    if not words or words[0] not in _IMPERATIVE_VERBS:
        return False
    return _bare_verb(words)


def _bare_verb(words: list[str]) -> bool:
    """words[0] is a verb with no subject, not a noun ('Use is limited', 'Call of Duty')."""
    return len(words) < 2 or not (
        words[1] in ("of", "is", "was", "are", "were", "has", "had") or words[1] in _VERB_WORDS
    )


def _dangling(text: str, cut: bool = False) -> bool:
    """Whether the sentence stops mid-phrase: '... tell Gina about', '... likes Nate with'.

    cut: the clause ended with an ellipsis, so any function word at its end dangles.
    A stranded preposition after a verb or an adjective is whole ('what she is working
    on', 'something he is excited about').
    """
    raw = _WORD_RE.findall(text.replace("\u2019", "'"))
    if not raw:
        return False
    last = raw[-1].lower()
    if last in _ALWAYS_DANGLING or (cut and last in _CUT_DANGLING):
        return True
    if last not in _OBJECT_PREPOSITIONS or len(raw) < 3:
        return False
    before = raw[-2]
    return before.lower() in _OBJECTS or (before[:1].isupper() and before.lower() != "i")


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
_COORDINATED_RE = re.compile(r"(?:\b[A-Z][\w']*|\b(?i:my|our)\s+\w+)\s+and\s*$")
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
            slot = text[: m.start()]
            if (
                verb
                and (word.lower() == "i" or _SUBJECT_SLOT_RE.search(slot))
                and not _COORDINATED_RE.search(slot)  # "Gina and I are": plural
            ):
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


# Words after which a participle belongs to the gerund's own phrase: "Trying to get it
# fixed", "Working on a project I started".
_GERUND_OBJECT_END = _words("he she who that which to it get got be been being have has had")


def _gerund_subject(following: list[str]) -> bool:
    """Whether a past-tense verb follows an opening gerund's short object with no subject
    of its own in between: 'Adding timeout=10 fixed it', not 'Working on a project I
    started'."""
    for word in following[:4]:
        if word in _SUBJECT_PRONOUNS or word in _GERUND_OBJECT_END:
            return False
        if word in _IRREGULAR_PAST or (word.endswith("ed") and len(word) > 4):
            return True
    return False


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
        if any(w in _FINITE_VERBS for w in following) or _gerund_subject(following):
            return None  # a gerund subject: "Painting looks like ...", "Adding X fixed it"
        return f"{name} is {first} {rest}".rstrip()
    if (first in _IRREGULAR_PAST or (first.endswith("ed") and len(first) > 4)) and (
        len(words) > 1 and words[1][:1].islower()
    ):
        return f"{name} {first} {rest}".rstrip()
    if first == "like" and following[:1] and following[0] in _OBJECTS - {"it"}:
        return None  # a comparison: "Just like you with your tournament"
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


_HABITUAL_BEFORE_RE = re.compile(r"\b(?:every|each|most|all|other|the|a)\s+$", re.IGNORECASE)
_WEEKDAY_PREFIXES = frozenset(day[:3] for day in WEEKDAY_NAMES)


def _habitual(text: str, match: DateMatch) -> bool:
    """'every Thursday', 'the Sunday market': a weekday that is no one date."""
    weekday = match.mention.phrase.split()[-1].lower()[:3] in _WEEKDAY_PREFIXES
    return weekday and bool(_HABITUAL_BEFORE_RE.search(text[: match.begin]))


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
    matches = [m for m in find_dates(text, anchor) if not _recurring(m) and not _habitual(text, m)]
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


# --- formatting: markdown is layout, never a fact ----------------------------------------

_FENCE_RE = re.compile(r"^\s*(?:```|~~~)")
_HEADING_RE = re.compile(r"^\s{0,3}#{1,6}(?:\s|$)")
_RULE_RE = re.compile(r"^\s*(?:[-*_=]\s*){3,}$")
_QUOTE_RE = re.compile(r"^\s*(?:>\s?)+")
_LIST_ITEM_RE = re.compile(r"^\s*(?:[-*+\u2022\u2023\u25e6\u2013]|\d{1,3}[.)]|[a-z]\))\s+")
_URL_ONLY_RE = re.compile(r"^\s*[(<]?(?:https?://|www\.)\S+[)>]?\s*$", re.IGNORECASE)
_LINK_RE = re.compile(r"!?\[([^\]]*)\]\([^)\s]*\)")
_INLINE_CODE_RE = re.compile(r"`+([^`]*)`+")
_MARKERS_RE = re.compile(r"^\[[ xX]\]\s+|\s*\[\^?\d{1,3}\]|</?\w+\s*/?>")  # [ ], [1], <br>
_BOLD_LINE_RE = re.compile(r"^(?:\*\*|__)[^*_]+?(?<![.!?])(?:\*\*|__)\s*:?$")
_EMPHASIS_RES = (
    re.compile(r"\*\*(.+?)\*\*"),
    re.compile(r"(?<!\w)__(.+?)__(?!\w)"),
    re.compile(r"~~(.+?)~~"),
    re.compile(r"(?<![\w*])\*(?=\S)(.+?)(?<=\S)\*(?![\w*])"),
    re.compile(r"(?<![\w_])_(?=\S)(.+?)(?<=\S)_(?![\w_])"),
)
# A line of code written without a fence: a shell prompt, an import, an assignment, a
# call, or a line that ends like a statement.
_CODE_LINE_RE = re.compile(
    r"^\s*(?:\$\s|>>>|#!|import\s+\w|from\s+[\w.]+\s+import\b|def\s+\w+\s*\(|class\s+\w+\s*[(:]"
    r"|return\b|(?:const|let|var)\s+\w+\s*=|[\w.\[\]]+\s*[+\-*/]?=\s*\S|[}\])])"
    r"|[;{}]\s*$|\w\([^()]*\)\s*$"
)
# "Note: ...", "Must-see: ...", "Meeting notes 12 Jan: ...": a label, not a subject.
_LABEL_RE = re.compile(r"^([^:\s][^:]{0,40}?)\s*:\s+(?=\S)")
_LABEL_WORDS = 4
_TITLE_WORDS = 6
_TERMINAL = (".", "!", "?", ";", ":", '"', "'", ")")


@dataclass(frozen=True)
class _Segment:
    """A run of text to read sentences from; strict: a list item or a label's value, kept
    only where it is a full clause."""

    text: str
    strict: bool


def _plain(line: str) -> str:
    """A line without its markup: links keep their text, emphasis and backticks go."""
    line = _LINK_RE.sub(r"\1", line)
    line = _MARKERS_RE.sub("", _INLINE_CODE_RE.sub(r"\1", line).strip())
    for pattern in _EMPHASIS_RES:
        line = pattern.sub(r"\1", line)
    return _SPACE_RE.sub(" ", line).strip()


def _code_heavy(line: str) -> bool:
    """Code, fenced by nothing: mostly `inline code`, or a line shaped like a statement."""
    if _CODE_LINE_RE.search(line):
        return True
    code = sum(len(span) for span in _INLINE_CODE_RE.findall(line))
    return code > 0 and code * 5 >= 2 * len(line.replace(" ", ""))


def _layout_only(line: str) -> bool:
    """A line that is formatting: heading, rule, table row, bare link, code, bold title."""
    stripped = line.strip()
    return bool(
        _HEADING_RE.match(line)
        or _RULE_RE.match(line)
        or stripped.startswith("|")
        or stripped.count("|") >= 2
        or _URL_ONLY_RE.match(stripped)
        or _BOLD_LINE_RE.match(stripped)
        or _code_heavy(stripped)
    )


def _segments(text: str) -> list[_Segment]:
    """The turn's prose and list items, its markdown layout dropped.

    Headings, title lines ("Budget tips:"), table rows, code (fenced, or lines that
    look like it), rules and lines that are only a link give nothing. A list item or
    a labelled line ("Note: ...") is its own strict segment. Other lines are prose; a
    line that does not end a sentence and is followed by a lower-case line is one
    sentence wrapped over two lines. A short unpunctuated line just above a list or a
    table is that list's title.
    """
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    kinds: list[str] = []  # per line: skip, item, prose
    in_code = False
    for line in lines:
        if _FENCE_RE.match(line):
            in_code = not in_code
            kinds.append("skip")
        elif in_code or not line.strip() or _layout_only(_QUOTE_RE.sub("", line)):
            kinds.append("skip")
        else:
            kinds.append("item" if _LIST_ITEM_RE.match(_QUOTE_RE.sub("", line)) else "prose")
    segments: list[_Segment] = []
    open_prose = False  # the last segment is prose that the next line may continue
    for index, (line, kind) in enumerate(zip(lines, kinds, strict=True)):
        if kind == "skip":
            open_prose = False
            continue
        line = _QUOTE_RE.sub("", line)
        item = _LIST_ITEM_RE.match(line) if kind == "item" else None
        body = _plain(line[item.end() :] if item else line)
        if not body or body.endswith(":") or (not item and _list_title(body, lines, index)):
            open_prose = False  # a title: "Here are some options:", "Vegetarian spots"
            continue
        strict = item is not None
        label = _LABEL_RE.match(body)
        if label and _is_label(label[1]):
            body, strict = body[label.end() :], True
        if strict:
            segments.append(_Segment(body, True))
            open_prose = False
        elif open_prose and body[:1].islower():
            segments[-1] = _Segment(f"{segments[-1].text} {body}", False)
        else:
            segments.append(_Segment(body, False))
            open_prose = True
        if body.endswith(_TERMINAL):
            open_prose = False
    return segments


def _is_label(text: str) -> bool:
    """'Note', 'Must-see', 'Meeting notes 12 Jan'; not a clause like 'I have three kids'."""
    words = _tokens(text)
    return (
        0 < len(words) <= _LABEL_WORDS
        and words[0] not in _FIRST_WORDS_OF_CLAUSES
        and not any(w in _VERB_WORDS or w in _FINITE_VERBS or w in _IRREGULAR_PAST for w in words)
    )


_FIRST_WORDS_OF_CLAUSES = _words("i we you he she they it my our your his her their")


def _list_title(body: str, lines: list[str], index: int) -> bool:
    """A short unpunctuated line right above a list item or a table row."""
    if body.endswith(_TERMINAL) or len(body.split()) > _TITLE_WORDS:
        return False
    following = next((line for line in lines[index + 1 :] if line.strip()), "")
    following = _QUOTE_RE.sub("", following).strip()
    return bool(_LIST_ITEM_RE.match(following) or following.startswith("|"))


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


ASSISTANT_CONFIDENCE = 0.5  # the most an assistant's statement is trusted


def _confidence(text: str, reported: bool, implicit: bool, assistant: bool = False) -> float:
    words = len(text.split())
    value = 0.8 - max(0, words - 15) * 0.01 - (0.05 if reported else 0) - (0.05 if implicit else 0)
    value = min(0.8, max(0.6, value))
    return round(min(value, ASSISTANT_CONFIDENCE) if assistant else value, 2)


@dataclass(frozen=True)
class _Context:
    speaker: _Person | None  # for a note: its author, who "I" is
    addressee: _Person | None
    people: frozenset[str]
    anchor: datetime | None
    turn_id: str | None
    note: bool = False  # a note: nothing in it is reported speech or said to anyone
    assistant: bool = False  # an assistant's turn: only concrete statements, lower trust


def _as_utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


def _clause_fact(clause: str, ctx: _Context, strict: bool = False) -> ExtractedFact | None:
    """The fact one clause states, or None: chit-chat, a question, advice, a fragment.

    strict (a list item, a label's value): kept only as a full clause. A fact is a
    whole sentence: its clause has a finite verb after a subject and does not stop
    mid-phrase. An assistant's statement is kept only when it is concrete (a number
    or a name) and is reported as the assistant's words.
    """
    text = _INTERJECTION_RE.sub("", clause.lstrip(" .\u2026")).strip(" ,")
    text = _strip_vocatives(text, ctx.people)
    text = _TRAILING_NOISE_RE.sub("", text.rstrip(" .!,;:")).strip().rstrip(" .!,;:")
    if not text or text.endswith("?"):
        return None
    for pattern, replacement in _SLANG:
        text = pattern.sub(replacement, text)
    first_person = ctx.speaker is not None and bool(_FIRST_PERSON_RE.search(text))
    spoken = ctx.speaker is not None and not ctx.note
    if spoken and (
        _SKIP_OPENER_RE.match(text)
        or _LIKING_THAT_RE.match(text)
        or (not first_person and _REACTION_RE.match(text))
    ):
        return None
    informative = [w for w in content_words(text) if w not in ctx.people]
    vague = spoken and not first_person and _PRONOUN_OPENER_RE.match(text)
    dated, event = _rewrite_dates(text, ctx.anchor)
    # a dated event is worth keeping even when short: "I visited her yesterday"
    needed = (3 if vague else 2) - (event is not None and dated != text)
    if len(informative) < needed:
        return None

    who = _attribute(dated, first_person, ctx)
    if _finite_verb(who.dated, strict) is None:
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
    if not body or _dangling(body, cut=clause.rstrip().endswith(("...", "\u2026"))):
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


def _concrete(text: str, ctx: _Context) -> bool:
    """A number, a quoted title, or a name other than the conversation's people.

    An opening capitalised word is no name here ('Indexes speed up reads'), nor is an
    acronym alone ('the HTTP call'); 'Hoshinoya Kyoto' and 'stay at Hoshinoya' are.
    """
    if _DIGIT_RE.search(text) or _QUOTED_RE.search(text):
        return True
    for offset, name in _names(text, ctx.people):
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
    # an assistant's claim about the world stays its claim: "AI said Gunicorn's ..."
    reported = subject is None or ctx.assistant
    return _Attribution(dated, body, subject or name, "world", reported, False, False)


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


def _clauses(sentence: str) -> list[str]:
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
    if not words or len(words) > 3 or _finite_verb(piece) is not None:
        return False
    if words[0].lower() in ("my", "our", "his", "her", "their", "the"):
        return True
    return all(w[:1].isupper() for w in words) and not _is_common_word(words[0], initial=True)


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
    facts: list[ExtractedFact] = []
    index_of: dict[str, int] = {}
    for turn, other in zip(turns, _addressees(turns), strict=True):
        assistant = assistants.said(turn.speaker)
        if assistant and not from_assistant:
            continue
        ctx = _Context(
            speaker=_person(turn.speaker) or _person(turn.author),
            addressee=_person(other) if turn.speaker else None,
            people=people,
            anchor=turn.timestamp or session_date,
            turn_id=turn.turn_id,
            note=not turn.speaker,
            assistant=assistant,
        )
        found: list[ExtractedFact] = []
        for segment in _segments(turn.text):
            for sentence in _sentences(_clean(segment.text)):
                if sentence.rstrip().endswith("?"):
                    continue
                for clause in _clauses(sentence):
                    fact = _clause_fact(clause, ctx, segment.strict) if clause else None
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
