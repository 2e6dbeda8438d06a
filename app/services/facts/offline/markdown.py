"""A turn's markdown read as layout: the prose and list items that may hold facts.

Headings, titles, tables, code, rules and bare links are never a fact; list items and
labelled lines ("Note: ...") are kept only where they are a full clause (strict
segments), and prose wrapped over two lines is joined again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from app.services.facts.offline.lexicon import (
    FINITE_VERBS,
    IRREGULAR_PAST,
    SPACE_RE,
    VERB_WORDS,
    tokens,
    word_set,
)

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
    return SPACE_RE.sub(" ", line).strip()


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


def text_segments(text: str) -> list[_Segment]:
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
    words = tokens(text)
    return (
        0 < len(words) <= _LABEL_WORDS
        and words[0] not in _FIRST_WORDS_OF_CLAUSES
        and not any(w in VERB_WORDS or w in FINITE_VERBS or w in IRREGULAR_PAST for w in words)
    )


_FIRST_WORDS_OF_CLAUSES = word_set("i we you he she they it my our your his her their")


def _list_title(body: str, lines: list[str], index: int) -> bool:
    """A short unpunctuated line right above a list item or a table row."""
    if body.endswith(_TERMINAL) or len(body.split()) > _TITLE_WORDS:
        return False
    following = next((line for line in lines[index + 1 :] if line.strip()), "")
    following = _QUOTE_RE.sub("", following).strip()
    return bool(_LIST_ITEM_RE.match(following) or following.startswith("|"))
