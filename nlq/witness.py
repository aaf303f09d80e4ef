"""Value witnesses (SAG III-D): the question's literals bound to stored values and keys.

    >>> from nlq.index import index_documents
    >>> ix = index_documents("w", {"labs": [{"values_by_year": {"1987": 5.1}}, {"values_by_year": {"1990": 4.8}}]})
    >>> [(w["term"], w["matches"][0]["kind"], w["matches"][0]["path"], w["hard"])
    ...  for w in find("What was the value in 1987?", ix)]
    [('1987', 'key', 'values_by_year', True)]

Literals are taken from the question only (a task's `gold`, `gold_mql` and
`labels` are never read), in this order of precedence:

1. quoted strings ("...", '...', “...”, ‘...’) — always reported, even when
   nothing matches (an unwitnessed quoted literal is evidence too); one that
   matches nothing whole but whose two or three words are each stored in one
   collection, under different fields (a full name kept as first and last
   name), also gives each word as a witness (source ``quoted_part``);
2. dates (ISO ``1987-03-05``, ``March 5, 1987``, ``5 March 1987``), looked up as
   their ISO day, so they meet stored dates and ISO date strings;
3. ALL-CAPS codes (``HBA1C``, ``E11.9``, ``DNF``) and numbers (years included);
4. title-case phrases (``Central Lab``, ``Sable Ring Grand Prix``);
5. word n-grams (n <= 4, not only stopwords), longest first, left to right,
   that equal a stored value or key after normalization.

Kinds 2-5 are reported only when they match. Every lookup goes through
`nlq.text.normalize` (case, accents, punctuation, singular/plural), as the
index did with stored forms, and is a dict probe.

A witness is ``{term, source, matches: [{stored, kind, collection, path,
frequency, part?}], hard}``; ``hard`` is true when its exact matches lie in
at least 1 and at most ``hard_max`` (default 3) distinct (collection, path)
locations: those are few enough for the gate to enforce, the others only
inform. Year-of-date matches (``part: "year"``, see nlq.index) are not exact
stored forms: they are reported but do not count as locations.
"""

from __future__ import annotations

import re
from typing import Iterable, Iterator

from nlq import io
from nlq.errors import InputError, InputTooLarge, MissingQuestionError, NlqError, UnknownDatabaseError, failure, json_type
from nlq.text import STOPWORDS, normalize, singular, tokens, word_spans

DEFAULT_HARD_MAX = 3
# A question is a sentence or a short paragraph; past this bound a record is refused before any
# work (the analyses are linear or worse in the question's length).
DEFAULT_MAX_QUESTION_CHARS = 4000
MAX_NGRAM = 4
STAGE = "witness"

MONTHS = {m: i for i, m in enumerate(
    "january february march april may june july august september october november december".split(), 1)}
MONTHS.update({m[:3]: i for m, i in list(MONTHS.items())})
MONTHS["sept"] = 9

_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
QUOTED = re.compile(r"\"([^\"]+)\"|“([^”]+)”|‘([^’]+)’|(?<!\w)'([^']+)'(?!\w)")
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_MDY = re.compile(r"\b" + _MONTH + r"\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?,?\s+(?P<year>\d{4})\b", re.I)
_DMY = re.compile(r"\b(?P<day>\d{1,2})(?:st|nd|rd|th)?\s+" + _MONTH + r",?\s+(?P<year>\d{4})\b", re.I)
CODE = re.compile(r"(?<![\w.])(?=[A-Z0-9.+/-]*[A-Z])[A-Z0-9][A-Z0-9.+/-]*[A-Z0-9](?![\w])")
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w])|(?<![\w.])[-+]?\d+(?:\.\d+)?(?![\w])")
_TITLE_WORD = r"[A-Z][\w'’&.-]*"
TITLE = re.compile(_TITLE_WORD + r"(?:\s+(?:(?:of|de|la|del|the|and|da|do|van|von|y)\s+)?" + _TITLE_WORD + r")*")


LITERALS = ("nlq", "paper")


def find(question: str, index: dict, *, hard_max: int = DEFAULT_HARD_MAX, literals: str = "nlq") -> list[dict]:
    """The witnesses of one question against one index document (`literals="paper"`: the paper's
    literal classes, see `find_paper`)."""
    if literals == "paper":
        return find_paper(question, index, hard_max=hard_max)
    if literals != "nlq":
        raise InputError(f"unknown literal classes {literals!r}; choose one of: {', '.join(LITERALS)}")
    values = index.get("values") or {}
    out: list[dict] = []
    seen: set[str] = set()

    def add(term: str, source: str, *, always: bool = False, key: str | None = None) -> bool:
        key = normalize(term) if key is None else key
        if not key or key in seen:
            return key in seen
        matches = values.get(key, [])
        if not matches and not always:
            return False
        seen.add(key)
        locations = {(m["collection"], m["path"]) for m in matches if "part" not in m}
        out.append({"term": term, "source": source, "matches": [dict(m) for m in matches],
                    "hard": 1 <= len(locations) <= hard_max})
        return True

    # quoted strings and dates are consumed: no code, number, phrase or n-gram is taken inside them
    consumed = []
    for m in QUOTED.finditer(question):
        consumed.append(m.span())
        quoted = next(g for g in m.groups() if g is not None)
        add(quoted, "quoted", always=True)
        _add_parts(add, quoted, values)
    for m in _ISO_DATE.finditer(question):
        consumed.append(m.span())
        _add_date(add, m.group(0), int(m.group(1)), int(m.group(2)), int(m.group(3)))
    for rx in (_MDY, _DMY):
        for m in rx.finditer(question):
            consumed.append(m.span())
            month = MONTHS[m.group("month").lower()]
            _add_date(add, m.group(0), int(m.group("year")), month, int(m.group("day")))

    def inside(m) -> bool:
        return any(a <= m.start() < b for a, b in consumed)

    for m in CODE.finditer(question):
        if not inside(m):
            add(m.group(0), "code")
    for m in _NUMBER.finditer(question):
        if not inside(m):
            add(m.group(0), "number")
    for m in TITLE.finditer(question):
        if inside(m):
            continue
        words = m.group(0).rstrip(".").split()
        # "Which North Lab" -> "North Lab": a sentence's capitalized opening word is no name
        for start in range(len(words)):
            if start and words[start - 1].lower() not in STOPWORDS:
                break
            if words[start].lower() not in STOPWORDS and add(" ".join(words[start:]), "title"):
                break
    start = 0
    for a, b in sorted(consumed) + [(len(question), len(question))]:
        if a > start:
            _ngrams(question[start:a], add)
        start = max(start, b)
    return out


# The paper's literal classes (§III-D: "quoted strings, dates, all-caps codes, and selected
# title-case phrases"; its reference implementation's patterns). A bare year counts as a date: the
# paper's case study (Table VI) resolves "1987" to a witnessed map key, which the reference's
# patterns never extract; the text is followed.
_PAPER_QUOTED = re.compile(r"'([^']{2,60})'|\"([^\"]{2,60})\"")
_PAPER_CAPS = re.compile(r"\b[A-Z][A-Z0-9_]{1,}(?:\s+[A-Z][A-Z0-9_]{1,}){0,4}\b")
_PAPER_DATE = re.compile(r"\b\d{4}[-/]\d{2}(?:[-/]\d{2})?\b")
_PAPER_YEAR = re.compile(r"(?<![\w.])(?:1[5-9]|20)\d{2}(?!\w|\.\d)")
_PAPER_TITLE = re.compile(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+){0,3}\b")
_PAPER_SHORT_WORD = re.compile(r"[\d_:]")


def find_paper(question: str, index: dict, *, hard_max: int = 6) -> list[dict]:
    """The paper's witnesses: quoted strings (2-60 characters), ALL-CAPS codes (3+ characters),
    dates and bare years are hard; title-case phrases (a sentence's first word alone excluded) are
    soft; a short plain quoted word (one word under 6 characters, not all capitals, no digit, `_`
    or `:`) is demoted to soft, being usually an output label. Only literals stored as strings or
    map keys are reported (the paper's value index holds no numbers or dates); a witness is `hard` when its class is and its exact matches lie in at most
    `hard_max` locations."""
    values = index.get("values") or {}
    found: dict[str, tuple[str, bool]] = {}

    def take(term: str, source: str, hard: bool) -> None:
        found.setdefault(term, (source, hard))

    for m in _PAPER_QUOTED.finditer(question):
        take(m.group(1) or m.group(2), "quoted", True)
    for m in _PAPER_CAPS.finditer(question):
        if len(m.group(0)) >= 3 and m.group(0).lower() not in STOPWORDS:
            take(m.group(0), "code", True)
    for m in _PAPER_DATE.finditer(question):
        take(m.group(0), "date", True)
    for m in _PAPER_YEAR.finditer(question):
        take(m.group(0), "date", True)
    for m in _PAPER_TITLE.finditer(question):
        term, start = m.group(0), m.start()
        opening = start == 0 or question[max(0, start - 2):start].strip() in ("", ".", "?", "!", ":", ";")
        words = [w for w in term.split() if w.lower() not in STOPWORDS]
        if words and not (opening and len(words) < 2):
            take(term, "title", False)
    out, seen = [], set()
    for term, (source, hard) in found.items():
        key = normalize(term)
        # the paper's value index holds strings and map keys only (its reference indexes no number,
        # date or year of a date): a literal matches the stored strings and keys
        matches = [m for m in values.get(key, []) if isinstance(m.get("stored"), str) and "part" not in m]
        if not key or key in seen or not matches:
            continue
        seen.add(key)
        if " " not in term and len(term) < 6 and not term.isupper() and not _PAPER_SHORT_WORD.search(term):
            hard = False
        locations = {(m["collection"], m["path"]) for m in matches if "part" not in m}
        out.append({"term": term, "source": source, "matches": [dict(m) for m in matches],
                    "hard": hard and 1 <= len(locations) <= hard_max})
    return out


def _add_parts(add, quoted: str, values: dict) -> None:
    """A quoted name that no stored value equals whole, but whose every word is stored in
    one collection ('"Linda Smith"' kept as a first name and a last name): each word is
    a witness of its own (source ``quoted_part``)."""
    words = quoted.split()
    if not 2 <= len(words) <= MAX_PARTS or values.get(normalize(quoted)):
        return
    found = [values.get(normalize(w), []) for w in words]
    if not all(found) or any(normalize(w) in STOPWORDS for w in words):
        return
    shared = set.intersection(*({m["collection"] for m in f if "part" not in m} for f in found))
    paths = [{m["path"] for m in f if m["collection"] in shared and "part" not in m} for f in found]
    if shared and all(paths) and len(set().union(*paths)) > 1:  # the words are stored apart, not one field twice
        for w in words:
            add(w, "quoted_part")


MAX_PARTS = 3  # a quoted name is looked up word by word when it has at most this many words


def _add_date(add, text: str, year: int, month: int, day: int) -> None:
    if 1 <= month <= 12 and 1 <= day <= 31:
        add(text, "date", key=normalize(f"{year:04d}-{month:02d}-{day:02d}"))


def _ngrams(text: str, add) -> None:
    spans = [(tok, start, end) for word, start, end in word_spans(text) for tok in tokens(word)]
    words = [singular(tok) for tok, _, _ in spans]
    i = 0
    while i < len(words):
        step = 1
        for n in range(min(MAX_NGRAM, len(words) - i), 0, -1):
            if all(tok in STOPWORDS for tok, _, _ in spans[i:i + n]):
                continue
            surface = text[spans[i][1]:spans[i + n - 1][2]]
            if add(surface, "ngram", key=" ".join(words[i:i + n])):
                step = n
                break
        i += step


def run(records: Iterable[dict], indexes: dict[str, dict], *, hard_max: int = DEFAULT_HARD_MAX,
        max_question_chars: int = DEFAULT_MAX_QUESTION_CHARS, literals: str = "nlq") -> Iterator[dict]:
    """Add `witnesses` to every task record (failures pass through unchanged).

    A record that cannot be handled gets a typed `failure` and flows on:
    `missing_question` (no question text), `input_too_large` (a question
    longer than `max_question_chars`), `input_error` (no `db`, or one that is not
    a string), `unknown_db` (no index document for its db), `internal_error`
    (an unexpected exception, named in the message).
    """
    if hard_max < 0:
        raise InputError("--hard-max must be at least 0")
    if literals not in LITERALS:
        raise InputError(f"unknown literal classes {literals!r}; choose one of: {', '.join(LITERALS)}")
    for record in records:
        if io.has_failure(record):
            yield record
            continue
        try:
            record["witnesses"] = find(question_of(record, max_chars=max_question_chars),
                                       index_of(record, indexes), hard_max=hard_max, literals=literals)
        except NlqError as exc:
            record["failure"] = exc.to_failure(STAGE)
        except Exception as exc:  # noqa: BLE001 - a bug must not lose the record
            record["failure"] = failure(STAGE, "internal_error", f"{type(exc).__name__}: {exc}")
        yield record


def question_of(record: dict, *, max_chars: int = DEFAULT_MAX_QUESTION_CHARS) -> str:
    """The record's question text (MissingQuestionError when absent, empty or not a string,
    InputTooLarge when longer than `max_chars` characters)."""
    question = record.get("question")
    if question is not None and not isinstance(question, str):
        raise MissingQuestionError(f"the record's question must be a string, not {json_type(question)}")
    if not question or not question.strip():
        raise MissingQuestionError("the record has no question text")
    if len(question) > max_chars:
        raise InputTooLarge(f"the question has {len(question)} characters, more than {max_chars} "
                            "(the limit is --max-question-chars)")
    return question


def database_of(record: dict) -> str | None:
    """The record's `db` (None when absent); InputError when it is not a string."""
    db = record.get("db")
    if db is not None and not isinstance(db, str):
        raise InputError(f"the record's db must be a string, not {json_type(db)}")
    return db


def missing_db(indexes: dict[str, dict]) -> str:
    """The message for a record without a `db` (naming the databases `indexes` holds)."""
    known = ", ".join(sorted(indexes)) or "none"
    return f"the record has no db: add \"db\": NAME, the database its question is about (indexes: {known})"


def index_of(record: dict, indexes: dict[str, dict]) -> dict:
    """The index document of the record's db (UnknownDatabaseError when there is none)."""
    db = database_of(record)
    if db is None or db == "":
        raise InputError(missing_db(indexes))
    index = indexes.get(db)
    if index is None:
        known = ", ".join(sorted(indexes)) or "none"
        raise UnknownDatabaseError(f"no index document for db {db!r} (index has: {known})")
    return index


__all__ = ["find", "find_paper", "LITERALS", "run", "question_of", "database_of", "index_of", "missing_db", "DEFAULT_HARD_MAX", "DEFAULT_MAX_QUESTION_CHARS"]
