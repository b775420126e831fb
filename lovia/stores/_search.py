"""Full-text search shared by the session stores: what a typed query means, and a scan that matches it.

A query is what a user types into a search box, never SQLite's FTS5 syntax: every word is
searched for literally, so quotes, ``-``, ``*``, brackets and unbalanced quotes never make a
query fail. :func:`parse_query` reads it as:

- words (letters and digits; anything else separates them), all of which must occur;
- ``"a phrase"``: those words next to each other, in that order (an unclosed quote runs to the end);
- ``word*`` or ``"a phra"*``: the last word as a prefix;
- ``-word`` or ``-"a phrase"``: hits holding it are left out.

Matching ignores case and diacritics, as FTS5's ``unicode61`` tokenizer with
``remove_diacritics 2`` does, so the in-memory store's scan (:func:`match_text`) finds what the
SQLite store's index finds. A query with nothing to look for is a :class:`~lovia.errors.UserError`
that says so.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from lovia.entries import AssistantMessage, Entry, ToolCall, ToolResult, UserMessage
from lovia.errors import UserError

SNIPPET_WORDS = 12
"""Words a snippet shows around the first match (FTS5's ``snippet`` is given the same)."""
ELLIPSIS = "…"
MARK_OPEN, MARK_CLOSE = "\x02", "\x03"
"""What FTS5's ``snippet`` puts around a match; turned into offsets by :func:`unmark` (and never shown)."""

_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True, slots=True)
class Term:
    """One thing to look for: words next to each other; the last one a prefix when ``prefix``."""

    words: tuple[str, ...]
    prefix: bool = False
    exclude: bool = False

    def fts(self) -> str:
        """The term as FTS5 query syntax: a quoted phrase (quotes doubled inside), ``*`` for a prefix."""
        phrase = '"' + " ".join(self.words).replace('"', '""') + '"'
        return phrase + " *" if self.prefix else phrase


@dataclass(frozen=True, slots=True)
class SearchQuery:
    """A parsed query: ``include`` must all match, none of ``exclude`` may."""

    include: tuple[Term, ...]
    exclude: tuple[Term, ...] = ()

    def fts(self) -> str:
        """The FTS5 ``MATCH`` expression for this query (every word quoted: no operator of the user's reaches FTS5)."""
        expression = " ".join(term.fts() for term in self.include)
        if self.exclude:
            expression = f"({expression})" + "".join(f" NOT {term.fts()}" for term in self.exclude)
        return expression


def fold(text: str) -> str:
    """``text`` as the index compares it: diacritics removed, case folded."""
    # Lower case, not casefold: FTS5's unicode61 keeps "ß" as it is, and so must this.
    decomposed = unicodedata.normalize("NFD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).lower()


def words_of(text: str) -> list[str]:
    """The words of ``text``, folded (see :func:`fold`)."""
    return _WORD.findall(fold(text))


def parse_query(text: str) -> SearchQuery:
    """Read a typed query (see the module docstring). Raises ``UserError`` when it holds no word to find."""
    include: list[Term] = []
    exclude: list[Term] = []
    i, n = 0, len(text)
    while i < n:
        if text[i].isspace():
            i += 1
            continue
        negative = text[i] == "-" and i + 1 < n and not text[i + 1].isspace()
        if negative:
            i += 1
        if text[i] == '"':
            close = text.find('"', i + 1)
            end = n if close < 0 else close
            raw, i = text[i + 1:end], end + 1
            prefix = i < n and text[i] == "*"
        else:
            start = i
            while i < n and not text[i].isspace() and text[i] != '"':
                i += 1
            raw = text[start:i]
            prefix = raw.endswith("*")
        if prefix and i < n and text[i] == "*":
            i += 1
        words = tuple(words_of(raw))
        if words:
            (exclude if negative else include).append(Term(words, prefix, negative))
    if not include:
        if exclude:
            raise UserError("Say what to find as well: a search of only -excluded words has nothing to show. "
                            "Add a word without a minus.")
        raise UserError("Type a word to search for (punctuation alone is not searched).")
    return SearchQuery(tuple(include), tuple(exclude))


def searched_text(entry: Entry) -> str:
    """What of ``entry`` is searched (the SQLite index's triggers take the same fields)."""
    if isinstance(entry, (UserMessage, AssistantMessage)):
        return entry.text
    if isinstance(entry, ToolResult):
        return entry.output
    if isinstance(entry, ToolCall):
        return f"{entry.name} {entry.arguments}"
    return ""


def check_search_limit(limit: int) -> None:
    """A search's ``limit`` must be a positive number of hits."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise UserError(f"A search's limit must be a whole number of hits, 1 or more (got {limit!r}).")


def _spans(text: str) -> list[tuple[int, int, str]]:
    """Each word of ``text``: where it starts and ends in ``text``, and its folded form."""
    spans: list[tuple[int, int, str]] = []
    for match in _WORD.finditer(text):
        # Folding may change a word's length; matching uses the folded form, offsets the original.
        spans.extend((match.start(), match.end(), word) for word in words_of(match.group()))
    return spans


def _term_at(words: list[str], at: int, term: Term) -> bool:
    if at + len(term.words) > len(words):
        return False
    for offset, wanted in enumerate(term.words):
        word = words[at + offset]
        last = offset == len(term.words) - 1
        if not (word.startswith(wanted) if last and term.prefix else word == wanted):
            return False
    return True


def match_text(text: str, query: SearchQuery) -> list[tuple[int, int]] | None:
    """Where ``query``'s included terms occur in ``text`` (word spans, in order), or ``None`` when it does not match."""
    spans = _spans(text)
    words = [word for _, _, word in spans]
    hits: set[int] = set()
    for term in query.include:
        found = [at for at in range(len(words)) if _term_at(words, at, term)]
        if not found:
            return None
        for at in found:
            hits.update(range(at, at + len(term.words)))
    if any(_term_at(words, at, term) for term in query.exclude for at in range(len(words))):
        return None
    return [(spans[at][0], spans[at][1]) for at in sorted(hits)]


def match_to_show(text: str, query: SearchQuery) -> tuple[int, int] | None:
    """The match a reader is taken to first: the first on the line where the most of the query's
    matched words stand together, so a word that recurs on every line of a long text ("line" in a
    2,000-line listing) does not take the view to its top while the words sought stand together
    further down; ``None`` when ``text`` does not match."""
    matches = match_text(text, query)
    if not matches:
        return None
    lines, line, searched = [], 0, 0
    for start, _ in matches:  # in order: one pass over the text
        line += text.count("\n", searched, start)
        searched = start
        lines.append(line)
    words: dict[int, set[str]] = {}
    for at, (start, end) in zip(lines, matches, strict=True):
        words.setdefault(at, set()).add(fold(text[start:end]))
    best = max(words, key=lambda found: (len(words[found]), -found))
    return matches[lines.index(best)]


def snippet_of(text: str, matches: list[tuple[int, int]]) -> tuple[str, tuple[tuple[int, int], ...], tuple[int, ...]]:
    """A one-line excerpt of ``text`` around its first match, about :data:`SNIPPET_WORDS` words, the
    matches' offsets in it and its :func:`line_breaks` (the in-memory store's answer to FTS5's ``snippet``)."""
    spans = _spans(text)
    if not spans or not matches:
        return one_line(text[:80]), (), line_breaks(text[:80])
    first = next(i for i, (start, _, _) in enumerate(spans) if start >= matches[0][0])
    lo = max(0, min(first - SNIPPET_WORDS // 4, len(spans) - SNIPPET_WORDS))
    hi = min(len(spans), lo + SNIPPET_WORDS)
    begin = 0 if lo == 0 else spans[lo][0]
    end = len(text) if hi == len(spans) else spans[hi - 1][1]
    head = ELLIPSIS if begin > 0 else ""
    excerpt = head + one_line(text[begin:end]) + (ELLIPSIS if end < len(text) else "")
    shift = len(head) - begin
    inside = tuple((s + shift, e + shift) for s, e in matches if s >= begin and e <= end)
    return excerpt, inside, tuple(at + len(head) for at in line_breaks(text[begin:end]))


def one_line(text: str) -> str:
    """``text`` with line breaks and tabs as spaces: the same length, so offsets into it hold."""
    # A search first: most snippets hold none, and a scan in C is a tenth of str.translate's
    # lookup per character (0.16 against 1.6 us for a snippet; 50 of them for every search).
    return _LINE_BREAKS.sub(" ", text) if _LINE_BREAKS.search(text) else text


_LINE_BREAKS = re.compile("[\n\r\t\v\f]")


def line_breaks(text: str) -> tuple[int, ...]:
    """The offsets of ``text``'s line breaks (``\\n``, ``\\r``), which :func:`one_line` makes spaces:
    what still tells where a line began (a Markdown list item's ``- ``, a heading's ``#``)."""
    if "\n" not in text and "\r" not in text:
        return ()
    return tuple(found.start() for found in _NEWLINES.finditer(text))


_NEWLINES = re.compile("[\n\r]")


def unmark(marked: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    """FTS5 ``snippet`` output, :data:`MARK_OPEN` and :data:`MARK_CLOSE` around matches: the text and the offsets.

    Every mark is removed. A match is an opening mark and the first closing mark after it with
    no opening mark between; a mark that pairs with none (the stored text held one) is dropped,
    and the offsets count without it.
    """
    text, spans, _ = unmark_lines(marked)
    return text, spans


def unmark_lines(marked: str) -> tuple[str, tuple[tuple[int, int], ...], tuple[int, ...]]:
    """:func:`unmark`'s text and offsets, and the :func:`line_breaks` of the text."""
    pieces = marked.split(MARK_OPEN)
    head = pieces[0].replace(MARK_CLOSE, "")
    parts = [head]
    spans: list[tuple[int, int]] = []
    length = len(head)
    for piece in pieces[1:]:
        word, closed, after = piece.partition(MARK_CLOSE)
        if closed:
            spans.append((length, length + len(word)))
            after = after.replace(MARK_CLOSE, "")
        parts += (word, after)
        length += len(word) + len(after)
    text = "".join(parts)
    return one_line(text), tuple(spans), line_breaks(text)
