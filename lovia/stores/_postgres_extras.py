"""What a PostgreSQL session store offers beyond the core: search, the trash, forks, the rewind undo
and which sessions changed.

:class:`PostgresSessionExtras` is a mixin of :class:`~lovia.stores.postgres.PostgresSession`; it
works on the core's tables (``lovia_segments``, ``lovia_session_info``, see
:mod:`lovia.stores.postgres`) through the same :class:`~lovia.stores._postgres_db.PostgresDatabase`,
and :func:`session_v2` is the migration that adds its tables, functions and triggers (version 2 of
the ``session`` schema), :func:`session_v3` the change log's (version 3). It mirrors
:class:`~lovia.stores.sqlite.SQLiteSession`: the same tables
for the trash and the undo, the same rules and the same messages.

Full-text search. One row of ``lovia_search`` per searched entry (its run's ``seq`` and its index
in the run's array, so a hit names its entry and its position is the run's ``start`` plus that
index, read when searching), and one row of ``lovia_search_titles`` per title a user gave a
session, numbered from a sequence so that the latest given sorts first. Each holds the searched
text and a ``tsvector`` with a GIN index. Triggers on the core's tables keep them in step with
every write, whoever makes it (append, rewind, trim, clear, the trash, the undo, a fork, another
process, another version of lovia): a run inserted is indexed, a run whose entries change is
indexed again, a run deleted takes its rows with it (a foreign key ``ON DELETE CASCADE``).

The ``tsvector`` is not made by PostgreSQL's parser. That parser keeps ``libfoo.so``,
``example.com`` or ``/usr/bin`` as one token and keeps accents, where lovia's search (FTS5's
``unicode61`` tokenizer with ``remove_diacritics 2``, and :mod:`lovia.stores._search`) finds
``libfoo`` in ``libfoo.so`` and ``zurich`` in ``Zürich``. So the words are lovia's own:
:func:`lovia.stores._search.words_of`'s rule, written in SQL (``lovia_fold`` and
``lovia_words``, their character classes generated from this Python's Unicode tables when the
migration runs): case folded, diacritics removed, split on everything that is not a letter or a
digit. Each word is a lexeme at its place in the text (the ``'simple'`` configuration's
lexemes are the words as given), so a query's words (:func:`~lovia.stores._search.parse_query`,
folded by the same rule) become a ``tsquery`` that means what its FTS5 expression means: words
with ``&``, a phrase with ``<->``, a prefix with ``:*``, an exclusion with ``& !``.

Where PostgreSQL's limits make it differ from the SQLite store: a ``tsvector`` records a word's
place up to 16,383 and at most 256 places per word, so a phrase is found only within an entry's
first 16,383 words (single words are found anywhere); a word longer than 2,046 bytes is not
indexed; an entry whose words would need more than PostgreSQL's 1 MB ``tsvector`` is indexed by
as many of its first words as fit.

Snippets come from ``ts_headline`` over the entry's text, with :data:`~lovia.stores._search.MARK_OPEN`
and :data:`~lovia.stores._search.MARK_CLOSE` around what it marks and ``…`` where it cut, as the
SQLite store's ``snippet``. ``ts_headline`` marks the tokens of PostgreSQL's parser, so it is
given, as its query, every token of the text that holds a word the query looks for: ``libfoo``
marks ``libfoo.so`` whole, ``zurich`` marks ``Zürich``.

What it costs (2-core machine shared with other work, medians with the spread). Appends of runs of
10 entries (4.3 kB of text, some accented) from one writer: 0.42x (0.21-0.72) the appends/s with
the index's trigger disabled, 11 runs side by side; the words are made in SQL at about 0.3 ms an
entry of that size. Searches over 10,000 entries (1,000 runs of varied words), 7 each: a common
word 10 ms (8-18), a rare one 12 ms, a word found nowhere 2.7 ms, a phrase of common words 45 ms,
a prefix 38 ms; the snippets are most of it (``ts_parse`` and ``ts_headline`` for each hit shown).
"""

from __future__ import annotations

import functools
import json
import re
import string
import time
import unicodedata
from typing import Any

from lovia.errors import UserError
from lovia.session import FORK_META_KEY, ForkOrigin, RewindUndo, SearchHit, SessionChanges, TrashedSession
from lovia.stores._common import (
    check_fork,
    check_keep,
    check_purge,
    fork_target_taken,
    new_run_id,
    nothing_to_fork,
    nothing_to_undo,
    restore_refused,
    rewind_cut,
    title_from,
)
from lovia.stores._postgres_session import (
    FIRST_USER_TEXT,
    IN_ORDER,
    Connection,
    _PostgresSessionCore,
    delete_runs,
    lock_session,
    session_infos,
    touch,
)
from lovia.stores._search import (
    ELLIPSIS,
    MARK_CLOSE,
    MARK_OPEN,
    SNIPPET_WORDS,
    SearchQuery,
    Term,
    check_search_limit,
    parse_query,
    unmark_lines,
)

__all__ = ["PostgresSessionExtras", "session_v2", "session_v3"]

# -- lovia's words, in SQL ------------------------------------------------------------------

_LONGEST_WORD = 2046
"""Bytes a word may have to be indexed (PostgreSQL's lexemes stop below 2,048)."""
_PENDING_LIST_KB = 512
"""The search index's GIN pending list, in kB (see :func:`session_v2`)."""
_INDEX_TEXT_AT_ONCE = 100_000
"""Bytes of text above which a ``tsvector`` may outgrow PostgreSQL's 1 MB and is made carefully."""


_ASSIGNED = [(0, 0xD7FF), (0xE000, 0x3FFFF), (0xE0000, 0xE0FFF)]
"""Where Unicode assigns letters, digits and combining marks (surrogates and the other planes hold none)."""


def _ranges_bracket(ranges: list[tuple[int, int]]) -> str:
    """A regular expression bracket of the code point ``ranges``, written in PostgreSQL's ``\\U`` escapes."""
    return "[" + "".join(f"\\U{lo:08X}" + (f"-\\U{hi:08X}" if hi > lo else "") for lo, hi in ranges) + "]"


@functools.cache
def _character_classes() -> tuple[str, str]:
    """This Python's combining marks (what :func:`~lovia.stores._search.fold` removes) and word characters
    (the ``[^\\W_]`` :func:`~lovia.stores._search.words_of` finds), as brackets for PostgreSQL."""
    # One string of every code point that may be either, the spans apart by a space (neither).
    spans = [(lo, "".join(map(chr, range(lo, hi + 1)))) for lo, hi in _ASSIGNED]
    text = " ".join(chars for _, chars in spans)
    starts: list[tuple[int, int]] = []  # (index in text, code point) where each span begins
    at = 0
    for lo, chars in spans:
        starts.append((at, lo))
        at += len(chars) + 1

    def point_at(index: int) -> int:
        begin, lo = max(start for start in starts if start[0] <= index)
        return lo + index - begin

    def runs(found: Any) -> list[tuple[int, int]]:
        return [(point_at(m.start()), point_at(m.end() - 1)) for m in found]

    words = runs(re.finditer(r"[^\W_]+", text))
    marks: list[tuple[int, int]] = []
    for char in text:
        if unicodedata.combining(char):
            point = ord(char)
            if marks and marks[-1][1] == point - 1:
                marks[-1] = (marks[-1][0], point)
            else:
                marks.append((point, point))
    return _ranges_bracket(marks), _ranges_bracket(words)


def _sql_words_functions(icu: bool) -> list[str]:
    """``lovia_fold`` and ``lovia_words``: :func:`lovia.stores._search.fold` and ``words_of`` in SQL.

    The character classes are this Python's (``unicodedata.combining`` and the ``[^\\W_]`` of
    :mod:`lovia.stores._search`), so the index folds and splits a text as the query is folded and
    split. Lower case is taken in the ICU root locale when the server has it (``und-x-icu``), so
    it does not hang on the database's own locale (``C`` lowers ASCII only).
    """
    combining, letters = _character_classes()
    lower = 'lower(t COLLATE "und-x-icu")' if icu else "lower(t)"
    # ASCII text (most code and tool output) has no diacritics: lower case is all its folding.
    return [
        f"""CREATE FUNCTION lovia_fold(t TEXT) RETURNS TEXT LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
            AS $$ SELECT CASE WHEN octet_length(t) = char_length(t)
                                  THEN translate(t, '{string.ascii_uppercase}', '{string.ascii_lowercase}')
                              ELSE regexp_replace(normalize({lower}, NFD), '{combining}+', '', 'g') END $$""",
        # Separators to one space, then split: faster than regexp_split_to_array (measured).
        f"""CREATE FUNCTION lovia_words(t TEXT) RETURNS TEXT[] LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
            AS $$ SELECT array_remove(string_to_array(
                      regexp_replace(lovia_fold(t), '[^{letters[1:]}+', ' ', 'g'), ' '), '') $$""",
    ]


# ``lovia_tsvector``: the text's words as lexemes at their places (see the module docstring); a
# text whose vector would be too large for PostgreSQL gives the vector of as many first words as fit.
_TSVECTOR_FUNCTION = f"""
CREATE FUNCTION lovia_tsvector(t TEXT) RETURNS tsvector LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    words TEXT[] := lovia_words(t);
    kept INTEGER := cardinality(words);
BEGIN
    LOOP
        IF octet_length(t) <= {_INDEX_TEXT_AT_ONCE} THEN
            RETURN lovia_words_tsvector(words);
        END IF;
        BEGIN
            RETURN lovia_words_tsvector(words[1:kept]);
        EXCEPTION WHEN program_limit_exceeded THEN
            kept := kept / 2;
        END;
    END LOOP;
END $$"""
_WORDS_TSVECTOR_FUNCTION = f"""
CREATE FUNCTION lovia_words_tsvector(words TEXT[]) RETURNS tsvector LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT COALESCE(string_agg('''' || w.word || ''':' || least(w.n, 16383), ' '), '')::tsvector
      FROM unnest(words) WITH ORDINALITY AS w(word, n) WHERE octet_length(w.word) <= {_LONGEST_WORD} $$"""

# ``lovia_searched_entries``: the searched text of each entry of a run's JSON array, as
# :func:`lovia.stores._search.searched_text` takes it. A NUL character (``\\u0000``, which ``jsonb``
# cannot hold) is indexed as a space, which separates words as it does in lovia's words. A damaged
# array (not JSON) and items that are no entry objects are left out rather than failing the write;
# reading the run refuses it anyway.
_SEARCHED_ENTRIES_FUNCTION = """
CREATE FUNCTION lovia_searched_entries(entries TEXT)
RETURNS TABLE (item INTEGER, kind TEXT, body TEXT) LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    items jsonb;
BEGIN
    BEGIN
        items := entries::jsonb;
    EXCEPTION WHEN data_exception THEN
        BEGIN  -- jsonb cannot hold a NUL character: index the run with a space for each, written as
               -- an escape of the same shape, so the text stays JSON (after an escaped backslash too,
               -- where the text "\\u0000" a message wrote is then indexed as "\\u0020": a rare loss)
            items := replace(entries, '\\u0000', '\\u0020')::jsonb;
        EXCEPTION WHEN data_exception THEN
            RETURN;
        END;
    END;
    IF jsonb_typeof(items) <> 'array' THEN
        RETURN;
    END IF;
    RETURN QUERY
        SELECT e.item, e.kind, e.body FROM (
            SELECT (x.n - 1)::INTEGER AS item, x.value ->> 'type' AS kind,
                   CASE x.value ->> 'type'
                       WHEN 'user' THEN x.value ->> 'text'
                       WHEN 'assistant' THEN x.value ->> 'text'
                       WHEN 'tool_result' THEN x.value ->> 'output'
                       WHEN 'tool_call' THEN (x.value ->> 'name') || ' ' || (x.value ->> 'arguments')
                   END AS body
            FROM jsonb_array_elements(items) WITH ORDINALITY AS x(value, n)
            WHERE jsonb_typeof(x.value) = 'object'
        ) AS e
        WHERE e.body <> '';
END $$"""

_INDEX_RUN_FUNCTION = """
CREATE FUNCTION lovia_search_index_run() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        DELETE FROM lovia_search WHERE segment_seq = OLD.seq;
    END IF;
    INSERT INTO lovia_search (segment_seq, item, kind, body, words)
        SELECT NEW.seq, e.item, e.kind, e.body, lovia_tsvector(e.body) FROM lovia_searched_entries(NEW.entries) AS e;
    RETURN NULL;
END $$"""

_INDEX_TITLE_FUNCTION = """
CREATE FUNCTION lovia_search_index_title() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        DELETE FROM lovia_search_titles WHERE session_id = OLD.session_id;
    END IF;
    IF TG_OP <> 'DELETE' AND NEW.title IS NOT NULL THEN
        INSERT INTO lovia_search_titles (session_id, doc, body, words)
            VALUES (NEW.session_id, nextval('lovia_search_title_docs'), NEW.title, lovia_tsvector(NEW.title));
    END IF;
    RETURN NULL;
END $$"""

async def session_v2(conn: Connection) -> None:
    """Version 2 of the ``session`` schema: the trash, the rewind undo and the search index.

    The trash and undo tables are SQLite's (schema 4) with PostgreSQL's types; a run moved into
    them keeps its row as stored (fields a newer lovia wrote included). The search index is
    built for what the database holds already, by the statements its triggers run.
    """
    statements = [
        """CREATE TABLE lovia_trash (
            trash_id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            session_id TEXT NOT NULL,
            title TEXT,
            shown_title TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL,
            last_activity DOUBLE PRECISION NOT NULL,
            deleted_at DOUBLE PRECISION NOT NULL
        )""",
        "CREATE INDEX lovia_trash_by_deleted ON lovia_trash (deleted_at)",
        "CREATE INDEX lovia_trash_by_session ON lovia_trash (session_id)",
        """CREATE TABLE lovia_trash_runs (
            trash_id BIGINT NOT NULL REFERENCES lovia_trash ON DELETE CASCADE,
            position INTEGER NOT NULL,
            run_id TEXT NOT NULL,
            meta TEXT NOT NULL,
            entry_count INTEGER NOT NULL,
            appended_at DOUBLE PRECISION NOT NULL,
            kinds TEXT NOT NULL,
            entries TEXT NOT NULL,
            PRIMARY KEY (trash_id, position)
        )""",
        """CREATE TABLE lovia_rewind_undo (
            session_id TEXT PRIMARY KEY,
            rewound_at DOUBLE PRECISION NOT NULL,
            keep_entries INTEGER NOT NULL,
            kept_runs INTEGER NOT NULL,
            removed INTEGER NOT NULL,
            last_activity DOUBLE PRECISION NOT NULL,
            added_run_id TEXT
        )""",
        """CREATE TABLE lovia_rewind_undo_runs (
            session_id TEXT NOT NULL,
            position INTEGER NOT NULL,
            run_id TEXT NOT NULL,
            meta TEXT NOT NULL,
            entry_count INTEGER NOT NULL,
            appended_at DOUBLE PRECISION NOT NULL,
            kinds TEXT NOT NULL,
            entries TEXT NOT NULL,
            PRIMARY KEY (session_id, position)
        )""",
        # -- search
        """CREATE TABLE lovia_search (
            segment_seq BIGINT NOT NULL REFERENCES lovia_segments (seq) ON DELETE CASCADE,
            item INTEGER NOT NULL,
            kind TEXT NOT NULL,
            body TEXT NOT NULL,
            words tsvector NOT NULL,
            PRIMARY KEY (segment_seq, item)
        )""",
        # New entries wait in the index's pending list until it is merged (at this size, or by
        # autovacuum), and every search reads that list through: 4 MB by default, tens of ms a
        # search (measured); 512 kB keeps it to a few.
        f"CREATE INDEX lovia_search_by_words ON lovia_search USING GIN (words) "
        f"WITH (gin_pending_list_limit = {_PENDING_LIST_KB})",
        "CREATE SEQUENCE lovia_search_title_docs",
        """CREATE TABLE lovia_search_titles (
            session_id TEXT PRIMARY KEY,
            doc BIGINT NOT NULL,
            body TEXT NOT NULL,
            words tsvector NOT NULL
        )""",
        "CREATE INDEX lovia_search_titles_by_words ON lovia_search_titles USING GIN (words)",
        _WORDS_TSVECTOR_FUNCTION,
        _TSVECTOR_FUNCTION,
        _SEARCHED_ENTRIES_FUNCTION,
        _INDEX_RUN_FUNCTION,
        _INDEX_TITLE_FUNCTION,
        """CREATE TRIGGER lovia_search_run_added AFTER INSERT ON lovia_segments
            FOR EACH ROW EXECUTE FUNCTION lovia_search_index_run()""",
        """CREATE TRIGGER lovia_search_run_changed AFTER UPDATE OF entries ON lovia_segments
            FOR EACH ROW WHEN (OLD.entries IS DISTINCT FROM NEW.entries) EXECUTE FUNCTION lovia_search_index_run()""",
        """CREATE TRIGGER lovia_search_title_changed AFTER INSERT OR UPDATE OF title OR DELETE ON lovia_session_info
            FOR EACH ROW EXECUTE FUNCTION lovia_search_index_title()""",
        # What the database holds already, through the statements the triggers run.
        """INSERT INTO lovia_search (segment_seq, item, kind, body, words)
            SELECT g.seq, e.item, e.kind, e.body, lovia_tsvector(e.body)
            FROM lovia_segments AS g, lovia_searched_entries(g.entries) AS e""",
        """INSERT INTO lovia_search_titles (session_id, doc, body, words)
            SELECT session_id, nextval('lovia_search_title_docs'), title, lovia_tsvector(title)
            FROM (SELECT session_id, title FROM lovia_session_info WHERE title IS NOT NULL
                  ORDER BY last_activity, session_id) AS titled""",
    ]
    cur = await conn.execute("SELECT EXISTS (SELECT 1 FROM pg_collation WHERE collname = 'und-x-icu')")
    row = await cur.fetchone()
    statements[statements.index(_WORDS_TSVECTOR_FUNCTION):statements.index(_WORDS_TSVECTOR_FUNCTION)] = \
        _sql_words_functions(bool(row and row[0]))
    for statement in statements:
        await conn.execute(statement)


# -- queries ----------------------------------------------------------------------------------


def _lexeme(word: str) -> str:
    # A word holds letters and digits only (lovia_words' rule), so no quote or backslash to escape.
    return f"'{word}'"


def _term_tsquery(term: Term) -> str:
    lexemes = [_lexeme(word) for word in term.words]
    if term.prefix:
        lexemes[-1] += ":*"
    return "(" + " <-> ".join(lexemes) + ")"


def _indexable(term: Term) -> bool:
    return all(len(word.encode()) <= _LONGEST_WORD for word in term.words)


def tsquery_of(query: SearchQuery) -> str | None:
    """The ``tsquery`` text meaning what ``query.fts()`` means to FTS5; ``None`` when nothing can match.

    A word too long to be indexed can never be found: a query that needs one finds nothing, and
    an exclusion of one leaves nothing out.
    """
    if not all(_indexable(term) for term in query.include):
        return None
    parts = [_term_tsquery(term) for term in query.include]
    parts += ["!" + _term_tsquery(term) for term in query.exclude if _indexable(term)]
    return " & ".join(parts)


def _word_patterns(query: SearchQuery) -> list[str]:
    """``LIKE`` patterns of the words a snippet marks: the included words, a prefix's last with ``%``."""
    patterns = {word for term in query.include for word in term.words[:-1]}
    patterns |= {term.words[-1] + ("%" if term.prefix else "") for term in query.include}
    return sorted(patterns)


def _within_patterns(query: SearchQuery) -> list[str]:
    """``LIKE`` patterns of a text holding one of the words a snippet marks, anywhere in it."""
    return sorted({f"%{word}%" for term in query.include for word in term.words})


_HEADLINE_OPTIONS = (f"StartSel={MARK_OPEN}, StopSel={MARK_CLOSE}, MaxWords={SNIPPET_WORDS}, "
                     f"MinWords={SNIPPET_WORDS // 2}, ShortWord=0, HighlightAll=false")
_SNIPPET_START = 80
"""Characters shown of a text ``ts_headline`` has no token to mark in (a word inside a token the
``'simple'`` configuration does not index, such as an XML tag): its start, as the in-memory store does."""


def _snippet_lateral(body: str) -> str:
    """Joins giving ``h.marked`` (the snippet of ``body`` ``ts_headline`` marks), ``h.plain`` (it unmarked)
    and ``h.at`` (where it starts in ``body``, 0 when not found).

    ``ts_headline`` is given the tokens of ``body`` (PostgreSQL's parser) that hold a word the query
    looks for, as one ``|`` query of their lexemes (``'simple'`` lexemes are the tokens in lower case).
    Each distinct token is split into words once, and an ASCII token (whose words are its lower case)
    only when it holds one of the words as text (``%(within)s``). A token longer than a ``tsquery``
    lexeme may be (a signed URL, a long path) is left out, as casting it would fail the search: a
    word found only inside one is not marked, and the snippet is then the text's start.
    """
    marks = (f"(SELECT string_agg('''' || replace(replace(lower(p.token), '\\', '\\\\'), '''', '''''') "
             f"|| '''', ' | ')::tsquery FROM (SELECT DISTINCT token FROM ts_parse('default', {body}) "
             f"WHERE tokid <> 12 AND octet_length(lower(token)) <= {_LONGEST_WORD}) AS p "
             "WHERE (octet_length(p.token) <> char_length(p.token) OR lower(p.token) LIKE ANY (%(within)s)) "
             "AND EXISTS (SELECT 1 FROM unnest(lovia_words(p.token)) AS w(word) "
             "WHERE w.word LIKE ANY (%(patterns)s)))")
    headline = (f"COALESCE(ts_headline('simple', {body}, {marks}, '{_HEADLINE_OPTIONS}'), "
                f"left({body}, {_SNIPPET_START}))")
    plain = f"replace(replace(m.marked, chr({ord(MARK_OPEN)}), ''), chr({ord(MARK_CLOSE)}), '')"
    # OFFSET 0 keeps the headline a subquery of its own, made once per hit (inlined, it would be
    # made again wherever it is used).
    return (f"CROSS JOIN LATERAL (SELECT {headline} AS marked OFFSET 0) AS m "
            f"CROSS JOIN LATERAL (SELECT m.marked, {plain} AS plain, strpos({body}, {plain}) AS at) AS h")


_SNIPPET = """h.marked, h.at > 1 AND left(x.body, h.at - 1) ~ '\\S',
        h.at > 0 AND substr(x.body, h.at + length(h.plain)) ~ '\\S'"""

_SEARCH_TITLES = f"""
    SELECT x.session_id, x.title, x.last_activity, {_SNIPPET}
    FROM (SELECT t.session_id, t.body, t.doc, i.title, i.last_activity
          FROM lovia_search_titles AS t JOIN lovia_session_info AS i USING (session_id)
          WHERE t.words @@ %(query)s::tsquery ORDER BY t.doc DESC LIMIT %(limit)s) AS x
    {_snippet_lateral("x.body")}
    ORDER BY x.doc DESC"""

# When a hit's run finished: its timing's ``finished_at`` when that is a number, else when it was
# stored. A meta is any JSON lovia was given, and PostgreSQL's JSON functions refuse a "\u0000"
# anywhere in it (a carried summary may hold one), which failed the whole search: it is read with
# each "\u0000" as "\ufffd", an escape of the same shape, so the text stays valid JSON whatever
# precedes it (an escaped backslash included). Read for the hits returned only (after the LIMIT).
_FINISHED_AT = """CASE
    WHEN json_typeof(replace(x.meta, '\\u0000', '\\ufffd')::json #> '{timing,finished_at}') = 'number'
    THEN (replace(x.meta, '\\u0000', '\\ufffd')::json #>> '{timing,finished_at}')::DOUBLE PRECISION
    ELSE x.appended_at END"""

_SEARCH_ENTRIES = f"""
    SELECT x.session_id, x.kind, x.position, x.run_id, {_FINISHED_AT}, {_SNIPPET}
    FROM (SELECT g.session_id, s.kind, g.start + s.item AS position, g.run_id, s.body, s.segment_seq, s.item,
                 g.meta, g.appended_at
          FROM lovia_search AS s JOIN lovia_segments AS g ON g.seq = s.segment_seq
          WHERE s.words @@ %(query)s::tsquery /*scope*/
          ORDER BY s.segment_seq DESC, s.item DESC LIMIT %(limit)s) AS x
    {_snippet_lateral("x.body")}
    ORDER BY x.segment_seq DESC, x.item DESC"""

_RUN_COLUMNS = "run_id, meta, entry_count, appended_at, kinds, entries"




async def _rows(conn: Connection, sql: str, args: Any = None) -> list[tuple[Any, ...]]:
    cur = await conn.execute(sql, args)
    return await cur.fetchall()


async def _row(conn: Connection, sql: str, args: Any = None) -> tuple[Any, ...] | None:
    cur = await conn.execute(sql, args)
    return await cur.fetchone()


# The titles of the sessions in an array, as :class:`~lovia.session.SessionInfo` has them: the one
# given, else the first user message's text (JSON, decoded by the driver).
_TITLES = f"""SELECT s.session_id, s.title, CASE WHEN s.title IS NULL THEN {FIRST_USER_TEXT} END
    FROM lovia_session_info AS s WHERE s.session_id = ANY(%s)"""


async def _titles(conn: Connection, session_ids: list[str]) -> dict[str, str]:
    titles: dict[str, str] = {}
    for session_id, title, first in await _rows(conn, _TITLES, (session_ids,)):
        titles[session_id] = title if title is not None else title_from(first) if isinstance(first, str) else ""
    return titles


async def _undo_of(conn: Connection, session_id: str) -> RewindUndo | None:
    row = await _row(conn, "SELECT rewound_at, keep_entries, removed, added_run_id FROM lovia_rewind_undo "
                           "WHERE session_id = %s", (session_id,))
    if row is None:
        return None
    runs = tuple(r for (r,) in await _rows(
        conn, "SELECT run_id FROM lovia_rewind_undo_runs WHERE session_id = %s ORDER BY position", (session_id,)))
    rewound_at, keep_entries, removed, added = row
    return RewindUndo(session_id, rewound_at, keep_entries, removed, runs, added)


async def _copy_runs(conn: Connection, seqs: list[int], into: str, key: object) -> None:
    """Copy the live runs ``seqs`` (in that order) into a table ``into`` opens: ``"<table> (<key column>, "``,
    numbered from 0; their rows are left as stored."""
    await conn.execute(
        f"INSERT INTO {into}position, {_RUN_COLUMNS}) "
        "SELECT %s, c.n - 1, g.run_id, g.meta, g.entry_count, g.appended_at, g.kinds, g.entries "
        "FROM unnest(%s::BIGINT[]) WITH ORDINALITY AS c(seq, n) JOIN lovia_segments AS g ON g.seq = c.seq",
        (key, seqs),
    )


async def _move_runs_in(conn: Connection, session_id: str, table: str, key_column: str, key: object,
                        start: int) -> None:
    """Append the runs ``table`` keeps under ``key`` to the live session, in their order, from position
    ``start``, and delete them there. Each gets a new ``seq``, in that order (the order of runs of no
    entries at one position)."""
    await conn.execute(
        f"INSERT INTO lovia_segments (session_id, {_RUN_COLUMNS}, start) "
        f"SELECT %s, {_RUN_COLUMNS}, %s + COALESCE(SUM(entry_count) OVER (ORDER BY position "
        "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) "
        f"FROM {table} WHERE {key_column} = %s ORDER BY position",
        (session_id, start, key),
    )
    await conn.execute(f"DELETE FROM {table} WHERE {key_column} = %s", (key,))


def _snippet(marked: str, before: bool, after: bool) -> tuple[str, tuple[tuple[int, int], ...], tuple[int, ...]]:
    """``ts_headline``'s marked text, with ``…`` where the text was cut: the snippet, its matches' offsets
    and its line breaks."""
    return unmark_lines((ELLIPSIS if before else "") + marked + (ELLIPSIS if after else ""))


async def session_v3(conn: Connection) -> None:
    """Version 3: which session each write touched (:meth:`PostgresSessionExtras.sessions_changed`).

    SQLite's change log (session schema 6), with the writing transaction's id in place of a
    number: ids are taken before commit, so a reader's mark is the oldest transaction still
    running when it read (its snapshot's ``xmin``), and the next read takes every change from that
    id on. A change committed late has an id at or above that mark, so it is never skipped; one
    may be named twice. Triggers on ``lovia_session_info``, which every write a listing shows goes
    through, keep it. ``txid_current`` and its kin exist on every PostgreSQL lovia runs on.
    """
    for statement in (
        "CREATE TABLE lovia_session_changes (session_id TEXT PRIMARY KEY, xact BIGINT NOT NULL)",
        "CREATE INDEX lovia_session_changes_by_xact ON lovia_session_changes (xact)",
        """CREATE FUNCTION lovia_log_session_change() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND OLD.session_id <> NEW.session_id) THEN
                INSERT INTO lovia_session_changes (session_id, xact) VALUES (OLD.session_id, txid_current())
                    ON CONFLICT (session_id) DO UPDATE SET xact = EXCLUDED.xact;
            END IF;
            IF TG_OP <> 'DELETE' THEN
                INSERT INTO lovia_session_changes (session_id, xact) VALUES (NEW.session_id, txid_current())
                    ON CONFLICT (session_id) DO UPDATE SET xact = EXCLUDED.xact;
            END IF;
            RETURN NULL;
        END $$""",
        """CREATE TRIGGER lovia_session_changed AFTER INSERT OR UPDATE OR DELETE ON lovia_session_info
            FOR EACH ROW EXECUTE FUNCTION lovia_log_session_change()""",
    ):
        await conn.execute(statement)



class PostgresSessionExtras(_PostgresSessionCore):
    """Search, trash, fork and the rewind undo for :class:`~lovia.stores.postgres.PostgresSession`.

    Mixed in before the core (``class PostgresSession(PostgresSessionExtras, _PostgresSessionCore)``):
    it works on the core's database object and tables, fills the core's hooks for the rewind undo
    and ``clear``, and uses the tables :func:`session_v2` and :func:`session_v3` add. Every write is
    one transaction that takes the session's lock (:func:`~lovia.stores._postgres_session.lock_session`)
    and tells other processes of the change (``notify_change``).
    """

    # -- which sessions changed (see lovia.session.ChangeTrackingSession) ---------------------

    async def sessions_changed(self, since: int | None) -> SessionChanges:
        """See :class:`~lovia.session.ChangeTrackingSession`: from the change log :func:`session_v3` adds,
        in one statement (one snapshot). The mark is that snapshot's oldest running transaction,
        so a session may be named again by the next call, never missed."""
        async def read(conn: Connection) -> SessionChanges:
            if since is None:
                cur = await conn.execute("SELECT txid_snapshot_xmin(txid_current_snapshot())")
                row = await cur.fetchone()
                assert row is not None
                return SessionChanges(int(row[0]), None)
            cur = await conn.execute(
                "SELECT txid_snapshot_xmin(txid_current_snapshot()), "
                "ARRAY(SELECT session_id FROM lovia_session_changes WHERE xact >= %s)", (since,))
            row = await cur.fetchone()
            assert row is not None
            mark = int(row[0])
            if since > mark:  # above any mark this database gives: another database now
                return SessionChanges(mark, None)
            return SessionChanges(mark, tuple(row[1]))

        return await self._db.read(read, "reading which sessions changed")

    # -- search (see lovia.session.SearchableSession) -----------------------------------------

    async def search(self, query: str, *, limit: int = 50, session_id: str | None = None) -> list[SearchHit]:
        """See :class:`~lovia.session.SearchableSession`: the query's ``tsquery`` on the index's GIN.

        Titles that match come first (the latest given first), then entries, the most recently
        stored first (by run, then by place in the run), as the SQLite store orders them; snippets
        are made for the hits returned only. See the module docstring for what is a word.
        """
        parsed = parse_query(query)
        check_search_limit(limit)
        tsquery = tsquery_of(parsed)
        if tsquery is None:
            return []
        args = {"query": tsquery, "limit": limit, "patterns": _word_patterns(parsed),
                "within": _within_patterns(parsed), "session": session_id}

        async def read(conn: Connection) -> list[SearchHit]:
            # The planner prices ts_parse and ts_headline high enough to compile these statements
            # (JIT), which takes longer (around 100 ms) than running them.
            await conn.execute("SET LOCAL jit = off")
            hits: list[SearchHit] = []
            if session_id is None:
                for found, title, last_activity, marked, before, after in await _rows(conn, _SEARCH_TITLES, args):
                    snippet, matches, breaks = _snippet(marked, before, after)
                    hits.append(SearchHit(found, title, None, "title", snippet, matches, None, last_activity, breaks))
            if len(hits) >= limit:
                return hits
            scope = "" if session_id is None else "AND g.session_id = %(session)s"
            rows = await _rows(conn, _SEARCH_ENTRIES.replace("/*scope*/", scope),
                               {**args, "limit": limit - len(hits)})
            titles = await _titles(conn, list({row[0]: None for row in rows}))
            for found, kind, position, run_id, at, marked, before, after in rows:
                snippet, matches, breaks = _snippet(marked, before, after)
                hits.append(SearchHit(found, titles.get(found, ""), position, kind, snippet, matches, run_id, at,
                                      breaks))
            return hits

        return await self._db.read(read, "searching sessions")

    # -- the core's hooks ---------------------------------------------------------------------

    async def _after_append(self, conn: Connection, session_id: str, run_id: str) -> None:
        # The first run after an undoable rewind is its resend; the next one forgets the undo.
        cur = await conn.execute("UPDATE lovia_rewind_undo SET added_run_id = %s "
                                 "WHERE session_id = %s AND added_run_id IS NULL", (run_id, session_id))
        if not cur.rowcount:
            await self._forget_undo(conn, session_id)

    async def _forget_undo(self, conn: Connection, session_id: str) -> None:
        await conn.execute("DELETE FROM lovia_rewind_undo_runs WHERE session_id = %s", (session_id,))
        await conn.execute("DELETE FROM lovia_rewind_undo WHERE session_id = %s", (session_id,))

    async def _after_clear(self, conn: Connection, session_id: str) -> None:
        # For good: the trashed copies under its id go too (their runs with them, ON DELETE CASCADE).
        await conn.execute("DELETE FROM lovia_trash WHERE session_id = %s", (session_id,))

    async def _keep_for_undo(self, conn: Connection, session_id: str, seqs: list[int]) -> None:
        await _copy_runs(conn, seqs, "lovia_rewind_undo_runs (session_id, ", session_id)
        # The undo's row, with the session's last activity before the rewind; the rest is
        # recorded once the rewind is done (_record_undo).
        await conn.execute(
            "INSERT INTO lovia_rewind_undo (session_id, rewound_at, keep_entries, kept_runs, removed, last_activity) "
            "SELECT %s, 0, 0, 0, 0, COALESCE((SELECT last_activity FROM lovia_session_info WHERE session_id = %s), 0)",
            (session_id, session_id),
        )

    async def _record_undo(
        self, conn: Connection, session_id: str, now: float, keep_entries: int, kept_runs: int, removed: int
    ) -> None:
        await conn.execute(
            "UPDATE lovia_rewind_undo SET rewound_at = %s, keep_entries = %s, kept_runs = %s, removed = %s "
            "WHERE session_id = %s",
            (now, keep_entries, kept_runs, removed, session_id),
        )

    # -- trash (see lovia.session.TrashingSession) -------------------------------------------

    async def trash_session(self, session_id: str) -> TrashedSession | None:
        """Move the session to the trash; ``None`` when it is unknown. Its rewind undo is forgotten.

        Its runs' rows move, in one transaction, to ``lovia_trash_runs``, as they are stored
        (fields a newer lovia wrote included).
        """
        async def write(conn: Connection) -> TrashedSession | None:
            await lock_session(conn, session_id)
            infos = await session_infos(conn, session_id)
            if not infos:
                return None
            info = infos[0]
            title = await _row(conn, "SELECT title FROM lovia_session_info WHERE session_id = %s", (session_id,))
            now = time.time()
            row = await _row(
                conn,
                "INSERT INTO lovia_trash (session_id, title, shown_title, created_at, last_activity, deleted_at) "
                "VALUES (%s, %s, %s, %s, %s, %s) RETURNING trash_id",
                (session_id, title[0] if title else None, info.title, info.created_at, info.last_activity, now),
            )
            assert row is not None
            trash_id = int(row[0])
            seqs = [seq for (seq,) in await _rows(
                conn, f"SELECT g.seq FROM lovia_segments AS g WHERE g.session_id = %s {IN_ORDER}", (session_id,))]
            await _copy_runs(conn, seqs, "lovia_trash_runs (trash_id, ", trash_id)
            await delete_runs(conn, seqs)
            await conn.execute("DELETE FROM lovia_session_info WHERE session_id = %s", (session_id,))
            await self._forget_undo(conn, session_id)
            await self._db.notify_change(conn)
            return TrashedSession(trash_id, session_id, info.title, info.entry_count, info.run_count,
                                  info.created_at, info.last_activity, now)

        return await self._db.transaction(write, f"moving session {session_id!r} to the trash")

    async def list_trash(self) -> list[TrashedSession]:
        """What the trash holds, most recently deleted first."""
        async def read(conn: Connection) -> list[TrashedSession]:
            rows = await _rows(
                conn,
                "SELECT t.trash_id, t.session_id, t.shown_title, COALESCE(SUM(r.entry_count), 0), COUNT(r.run_id), "
                "t.created_at, t.last_activity, t.deleted_at FROM lovia_trash AS t "
                "LEFT JOIN lovia_trash_runs AS r USING (trash_id) GROUP BY t.trash_id "
                "ORDER BY t.deleted_at DESC, t.trash_id DESC",
            )
            return [TrashedSession(int(t), s, title, int(entries), int(runs), created, last, deleted)
                    for t, s, title, entries, runs, created, last, deleted in rows]

        return await self._db.read(read, "listing the trash")

    async def restore_session(self, trash_id: int) -> str:
        """Bring a deletion back; refused when it is gone or its session id is in use again."""
        gone = UserError(f"nothing in the trash is numbered {trash_id}: it was restored or purged meanwhile")

        async def write(conn: Connection) -> str:
            found = await _row(conn, "SELECT session_id FROM lovia_trash WHERE trash_id = %s", (trash_id,))
            if found is None:
                raise gone
            await lock_session(conn, found[0])
            # Read again under the session's lock: another restore or a purge may have come first.
            row = await _row(conn, "SELECT session_id, title, created_at, last_activity FROM lovia_trash "
                                   "WHERE trash_id = %s FOR UPDATE", (trash_id,))
            if row is None:
                raise gone
            session_id, title, created_at, last_activity = row
            if await _row(conn, "SELECT 1 FROM lovia_session_info WHERE session_id = %s UNION ALL "
                                "SELECT 1 FROM lovia_segments WHERE session_id = %s LIMIT 1",
                          (session_id, session_id)):
                raise restore_refused(session_id)
            await conn.execute("INSERT INTO lovia_session_info (session_id, title, created_at, last_activity) "
                               "VALUES (%s, %s, %s, %s)", (session_id, title, created_at, last_activity))
            await _move_runs_in(conn, session_id, "lovia_trash_runs", "trash_id", trash_id, 0)
            await conn.execute("DELETE FROM lovia_trash WHERE trash_id = %s", (trash_id,))
            await self._db.notify_change(conn)
            return str(session_id)

        return await self._db.transaction(write, f"restoring item {trash_id} of the trash")

    async def purge_trash(self, *, trash_id: int | None = None, deleted_before: float | None = None) -> int:
        """Forget trashed sessions for good: ``trash_id``, or every one deleted before ``deleted_before``."""
        check_purge(trash_id, deleted_before)

        async def write(conn: Connection) -> int:
            # Their runs go with them (ON DELETE CASCADE).
            cur = await conn.execute("DELETE FROM lovia_trash WHERE trash_id = %s OR deleted_at < %s",
                                     (trash_id, deleted_before))
            if cur.rowcount:
                await self._db.notify_change(conn)
            return cur.rowcount

        return await self._db.transaction(write, "purging the trash")

    # -- the last rewind's undo (see lovia.session.UndoableRewindSession) --------------------

    async def rewind_undoably(self, session_id: str, *, keep_entries: int) -> int:
        """:meth:`rewind`, keeping what it drops as the session's undo (see lovia.session.UndoableRewindSession)."""
        check_keep("keep_entries", keep_entries)
        return await self._db.transaction(lambda conn: self._rewind(conn, session_id, keep_entries, undoable=True),
                                          f"rewinding session {session_id!r}")

    async def rewind_undo(self, session_id: str) -> RewindUndo | None:
        return await self._db.read(lambda conn: _undo_of(conn, session_id), f"reading the undo of {session_id!r}")

    async def undo_rewind(self, session_id: str) -> RewindUndo:
        """Put the session back as it was before its last undoable rewind (the resend's run dropped)."""
        async def write(conn: Connection) -> RewindUndo:
            await lock_session(conn, session_id)
            undo = await _undo_of(conn, session_id)
            if undo is None:
                raise nothing_to_undo(session_id)
            row = await _row(conn, "SELECT kept_runs FROM lovia_rewind_undo WHERE session_id = %s", (session_id,))
            assert row is not None
            kept_runs = int(row[0])
            heads = await _rows(conn, "SELECT g.seq, g.start + g.entry_count FROM lovia_segments AS g "
                                      f"WHERE g.session_id = %s {IN_ORDER}", (session_id,))
            await delete_runs(conn, [seq for seq, _ in heads[kept_runs:]])
            start = heads[kept_runs - 1][1] if 0 < kept_runs <= len(heads) else 0
            await _move_runs_in(conn, session_id, "lovia_rewind_undo_runs", "session_id", session_id, start)
            await self._forget_undo(conn, session_id)
            await touch(conn, session_id, time.time())
            await self._db.notify_change(conn)
            return undo

        return await self._db.transaction(write, f"undoing the rewind of session {session_id!r}")

    # -- fork (see lovia.session.ForkableSession) ---------------------------------------------

    async def fork(self, session_id: str, *, keep_entries: int, new_session_id: str) -> int:
        """Copy the first ``keep_entries`` entries into ``new_session_id``; see :class:`~lovia.session.ForkableSession`.

        One transaction, under both sessions' locks. Whole runs are copied row to row (their
        stored JSON and meta as they are, fields a newer lovia wrote included); only the run the
        cut lands inside is decoded, truncated as ``rewind`` truncates it, and only the first
        copied run's meta is rewritten (to add the :class:`~lovia.session.ForkOrigin`).
        """
        check_fork(keep_entries, session_id, new_session_id)

        async def write(conn: Connection) -> int:
            # Both sessions' locks, in one order for every fork (two forks never wait on each other):
            # the source's runs cannot change between reading them and copying their rows.
            for locked in sorted({session_id, new_session_id}):
                await lock_session(conn, locked)
            if await _row(conn, "SELECT 1 FROM lovia_session_info WHERE session_id = %s "
                                "UNION ALL SELECT 1 FROM lovia_segments WHERE session_id = %s LIMIT 1",
                          (new_session_id, new_session_id)):
                raise fork_target_taken(new_session_id)
            heads = await _rows(conn, "SELECT g.seq, g.run_id, g.entry_count, g.meta FROM lovia_segments AS g "
                                      f"WHERE g.session_id = %s {IN_ORDER}", (session_id,))
            whole, partial = rewind_cut([count for _, _, count, _ in heads], keep_entries)
            # Each copy: the source run's seq (its row is copied as it is) or None for the truncated
            # run's entries, its run id, its meta as stored, and its entry count.
            copies: list[tuple[int | None, str, str, int]] = [
                (seq, run_id, meta, count) for seq, run_id, count, meta in heads[:whole] if count
            ]
            truncated: tuple[str, str] | None = None
            if partial:
                seq, run_id, count, _ = heads[whole]
                kept, truncated = await self._truncated_run(conn, session_id, seq, run_id, count, partial)
                if truncated is not None:
                    copies.append((None, run_id, "{}", kept))
            if not copies:
                raise nothing_to_fork(session_id)
            now = time.time()
            titles = await _titles(conn, [session_id])
            origin = ForkOrigin(session_id, min(keep_entries, sum(count for _, _, count, _ in heads)), now,
                                titles.get(session_id, ""))
            first_seq, first_run, first_meta, first_count = copies[0]
            meta = self._meta(first_meta, session_id, first_run)
            meta[FORK_META_KEY] = origin.to_meta()
            copies[0] = (first_seq, first_run, json.dumps(meta, separators=(",", ":")), first_count)
            position = 0
            for seq, _, meta_json, count in copies:
                row = (new_session_id, new_run_id(), position, count, meta_json, now)
                if seq is None:
                    assert truncated is not None
                    await conn.execute(f"INSERT INTO lovia_segments ({_FORK_COLUMNS}) "
                                       "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)", (*row, *truncated))
                else:
                    await conn.execute(f"INSERT INTO lovia_segments ({_FORK_COLUMNS}) "
                                       "SELECT %s, %s, %s, %s, %s, %s, kinds, entries FROM lovia_segments "
                                       "WHERE seq = %s", (*row, seq))
                position += count
            await conn.execute(
                "INSERT INTO lovia_session_info (session_id, title, created_at, last_activity) "
                "SELECT %s, (SELECT title FROM lovia_session_info WHERE session_id = %s), %s, %s",
                (new_session_id, session_id, now, now),
            )
            await self._db.notify_change(conn)
            return position

        return await self._db.transaction(write, f"forking session {session_id!r}")


_FORK_COLUMNS = "session_id, run_id, start, entry_count, meta, appended_at, kinds, entries"
