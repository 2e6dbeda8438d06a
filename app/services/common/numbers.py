"""Spelled-out numbers: one table of number words and their values.

Date phrases ("two weeks ago"), the contradiction rules ("has three kids"), dedup
("two" = "2") and the offline extractor's grammar ("two hours" is a quantity) all read
number words. The words and their values live here once; each caller takes the slice
it has always read (spelled(...) for a set of values) and says why in its own comment.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_ONES = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen"
    " fifteen sixteen seventeen eighteen nineteen"
)
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety"

# zero..nineteen, then the tens up to ninety: the numbers written as one word.
CARDINALS: dict[str, int] = {word: value for value, word in enumerate(_ONES.split())} | {
    word: 10 * tens for tens, word in enumerate(_TENS.split(), start=2)
}
# Words that count without being a digit's name: "a dozen eggs", "a hundred people".
QUANTITIES: dict[str, int] = {"dozen": 12, "hundred": 100}
NUMBER_WORDS: dict[str, int] = CARDINALS | QUANTITIES


def spelled(values: Iterable[int]) -> dict[str, int]:
    """The cardinal words for values, in ascending order: spelled(range(1, 4)) ->
    {'one': 1, 'two': 2, 'three': 3}. A value with no one-word name is skipped."""
    wanted = set(values)
    return {word: value for word, value in CARDINALS.items() if value in wanted}


def alternation(words: Iterable[str]) -> str:
    """A regex alternation of words, the longest first so none shadows a longer one
    ('seventeen' before 'seven'); equal lengths keep their order."""
    return "|".join(re.escape(word) for word in sorted(words, key=len, reverse=True))
