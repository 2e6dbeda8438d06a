"""The word lists and small patterns every part of the offline extractor reads.

Function words, chit-chat and the verb forms the clause grammar leans on are shared by
several modules (grammar, pronouns, names, markdown) and, for STOPWORDS, FILLER_WORDS and
content_words, by the gate's scoring and the dedup rules, so they live here once.
"""

from __future__ import annotations

import re

# --- function words and chit-chat (also read by gate scoring and dedup) -----------------


def word_set(text: str) -> frozenset[str]:
    """A word list written as a block of text, so long lexicons stay readable."""
    return frozenset(text.split())


STOPWORDS = word_set(
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

FILLER_WORDS = word_set(
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

WORD_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9'+\-]*")


def content_words(text: str) -> list[str]:
    """The words of text that carry information: no function words, no chit-chat."""
    words = []
    for raw in WORD_RE.findall(text.replace("\u2019", "'")):
        word = raw.lower()
        if word.endswith("'s"):
            word = word[:-2]
        word = word.strip("'-")
        if word in STOPWORDS or word in FILLER_WORDS or word.split("'")[0] in STOPWORDS:
            continue
        if len(word) >= 3 or word.isdigit():
            words.append(word)
    return words


def tokens(text: str) -> list[str]:
    return [w.lower() for w in WORD_RE.findall(text.replace("\u2019", "'"))]


SPACE_RE = re.compile(r"\s+")
DIGIT_RE = re.compile(r"\d")

# --- verbs and the words around them (grammar, pronouns, names, markdown) ---------------

ADVERBS = (
    r"(?:really|also|just|still|always|never|often|usually|actually|totally|finally|recently"
    r"|already|definitely|truly|sometimes|even|absolutely|honestly|kind\s+of|sort\s+of"
    r"|only|mostly|now|first|personally|currently|generally|especially|def|so|too)"
)

IRREGULAR_PAST = word_set(
    """
    went saw got made took ran came gave found told thought felt left kept began brought
    bought caught taught built sent spent lost met paid said sat stood understood wrote
    drove rode ate drank swam sang began chose forgot fell flew grew knew threw wore won
    woke broke spoke stole froze hid held heard led lent meant slept fought sold became
    did had was were dealt dreamt learnt burnt spelt sold told lit fed fled bled struck
    stuck hung shook forgave overcame undertook tore sought
    """
)
EMOTION_ADJECTIVES = word_set(
    """
    excited thrilled happy glad stoked proud grateful thankful nervous scared worried tired
    exhausted stressed busy swamped blessed lucky interested inspired motivated determined
    pumped psyched keen sad upset bummed amazed surprised overwhelmed eager ready so super
    really pretty very sure hopeful curious relieved delighted honored honoured content
    obsessed hooked addicted
    """
)
FINITE_VERBS = word_set(
    """
    is was are were has have had looks seems sounds makes helps can will would could might
    should must does did gives keeps brings means feels takes lets gets becomes remains
    isn't wasn't aren't weren't doesn't didn't hasn't haven't can't won't
    """
)
# Words that are a finite verb wherever they stand (with FINITE_VERBS, IRREGULAR_PAST
# and the third-person forms below): a clause needs one after its subject.
VERB_WORDS = word_set(
    """
    am be do done says goes knows wants needs likes loves lives works uses costs runs
    shall may i'm i've i'd i'll we're we've we'll we'd you're you've you'll you'd they're
    they've they'll they'd he's she's it's that's there's here's what's who's he'll she'll
    it'll that'll he'd she'd it'd
    """
)
SUBJECT_PRONOUNS = frozenset({"i", "we", "you", "they"})  # a base-form verb may follow
OBJECTS = word_set("him her them us me you it")
