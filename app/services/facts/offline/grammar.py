"""Clause grammar by word lists: has a clause a finite verb, does it stop mid-phrase?

No parser: a fact must be a whole sentence, so these rules find the clause's first
finite verb after its subject, tell an instruction ("Buy the ticket") from a statement,
notice a dangling end ("... tell Gina about") and make a verb agree with a third-person
subject once "I" has become a name.
"""

from __future__ import annotations

import re

from app.services.common.numbers import QUANTITIES, spelled
from app.services.facts.offline.lexicon import (
    ADVERBS,
    EMOTION_ADJECTIVES,
    FINITE_VERBS,
    IRREGULAR_PAST,
    OBJECTS,
    STOPWORDS,
    SUBJECT_PRONOUNS,
    VERB_WORDS,
    WORD_RE,
    tokens,
    word_set,
)

_LEAVE_VERBS = word_set(
    """
    can could will would shall should may might must did didn't was wasn't had hadn't can't
    cannot couldn't won't wouldn't shouldn't mustn't used put set read cut hit let quit hurt
    cost beat spread shut bet and or but to not also never always to as if when because so
    who that which then once first the a an in on at for with of as myself personally alone
    got let
    """
)

_BASE_VERB_STOPWORDS = word_set("make get go let do have")
_THE_MY = word_set("the my our his her their")
_DETERMINERS = _THE_MY | word_set("a an this that these those each every its your")
_ADVERB_WORDS = frozenset(re.findall(r"[a-z]+", ADVERBS)) - {"kind", "sort", "of"}

# Words after which an "-s" or "-ed" word is a noun or an adjective, not a verb; the
# number words are the ones this list has always held (one to ten, twelve, twenty,
# dozen, hundred), so "eleven hours" is read as before.
_NOMINAL_BEFORE = (
    word_set(
        """
        a an the my your his her its our their this that these those some any no every each
        all both many few several more most other another such what which whose of for with
        in on at by to from into onto about over under after before during without between
        per via than and or thousand
        """
    )
    | frozenset(spelled([*range(1, 11), 12, 20]))
    | frozenset(QUANTITIES)
)
# Bare verbs that open an instruction: "Buy the ticket", "Run the backup".
_IMPERATIVE_VERBS = word_set(
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
_ALWAYS_DANGLING = word_set("a an the and or but nor because if than whose my your our their")
# Words a sentence cut off with "..." stops on ("I have to tell you about...").
_CUT_DANGLING = _ALWAYS_DANGLING | word_set(
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
_OBJECT_PREPOSITIONS = word_set("with about to of for from at by into")


def _verb_at(words: list[str], raw: list[str], index: int, strict: bool = False) -> bool:
    """Whether words[index] (raw: as written) is a finite verb after a subject."""
    word = words[index]
    if word in VERB_WORDS or word in FINITE_VERBS or word in IRREGULAR_PAST:
        return True
    if word in _THIRD_PERSON.values() or word.endswith("n't"):
        return True
    if (word in STOPWORDS and word not in _BASE_VERB_STOPWORDS) or not raw[index][:1].islower():
        return False
    subject = index - 1  # the subject's last word: "we (all) need", "I really enjoy"
    while subject > 0 and (words[subject] in _ADVERB_WORDS or words[subject] in ("all", "both")):
        subject -= 1
    if words[subject] in SUBJECT_PRONOUNS:
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


def finite_verb(text: str, strict: bool = False) -> int | None:
    """Index of the clause's first finite verb after its subject; None if it has none.

    Word lists, not a parser: "Alice lives in Paris", "We deploy on Render" and
    "Trains leave every 30 minutes" have one; "Street food in Dotonbori", "Light
    layers and a rain jacket" and "Buy the ticket at the office" do not. strict (list
    items): the verb comes within six words, with no comma before it ("quartz,
    ordered from ..." is a label's value, not a clause).
    """
    raw = WORD_RE.findall(text.replace("\u2019", "'"))
    words = [w.lower() for w in raw]
    lead = _LEADING_SUBCLAUSE_RE.match(text)  # "Since you need to be back, fly home ..."
    if _imperative(words) or (lead and _imperative(tokens(text[lead.end() :]))):
        return None
    if words and "'" in words[0] and words[0] in VERB_WORDS:
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


_IS_AFTER = word_set(
    """
    a an the so very really such super pretty not always never been got gone just still
    also too quite going gonna in at on from like one my our your his her their all
    """
)


def _is_after(word: str) -> bool:
    """Whether word follows "'s" = "is"/"has" ("Oliver's hilarious"), not a possessive."""
    return (
        word in _IS_AFTER
        or word in EMOTION_ADJECTIVES
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
        words[1] in ("of", "is", "was", "are", "were", "has", "had") or words[1] in VERB_WORDS
    )


def dangling(text: str, cut: bool = False) -> bool:
    """Whether the sentence stops mid-phrase: '... tell Gina about', '... likes Nate with'.

    cut: the clause ended with an ellipsis, so any function word at its end dangles.
    A stranded preposition after a verb or an adjective is whole ('what she is working
    on', 'something he is excited about').
    """
    raw = WORD_RE.findall(text.replace("\u2019", "'"))
    if not raw:
        return False
    last = raw[-1].lower()
    if last in _ALWAYS_DANGLING or (cut and last in _CUT_DANGLING):
        return True
    if last not in _OBJECT_PREPOSITIONS or len(raw) < 3:
        return False
    before = raw[-2]
    return before.lower() in OBJECTS or (before[:1].isupper() and before.lower() != "i")


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


_ING_VERBS = frozenset({"bring", "sing", "ring", "sting", "swing", "cling", "fling", "spring"})


def third_person(verb: str) -> str:
    """Crude present-tense agreement for a verb that followed "I" or "you"."""
    lower = verb.lower()
    if lower in _THIRD_PERSON:
        return _THIRD_PERSON[lower]
    if (
        lower in _LEAVE_VERBS
        or lower in IRREGULAR_PAST
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
