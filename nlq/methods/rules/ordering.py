"""Ordering: explicit order phrases, measure superlatives, `top N`, and the default order."""

from __future__ import annotations

import re

from nlq.methods.rules.vocabulary import (ASC_WORDS, LIMIT_PATTERNS, MEASURE_SUPERLATIVES, PRICE_PHRASE,
                                          SUPERLATIVES, WORD_NUMBERS)
from nlq.methods.rules.accounting import asks_order
from nlq.methods.rules.ir import Field, IR, Mention
from nlq.methods.rules.schema import split_name
from nlq.methods.rules.question import Question, maybe_number, names_quantity, to_number, word_match
from nlq.methods.rules.grounding import measure_field


def detect_limit(q: Question, consumed: set[int]) -> tuple[int | None, int]:
    """('top 3', 'the 5 largest', 'first two') -> (N, direction implied: -1, 1 or 0)."""
    lower = q.text.lower()
    m = LIMIT_PATTERNS.search(lower) or re.search(
        r"\b(?P<w>top|first)\s+(?P<n>" + "|".join(WORD_NUMBERS) + r")\b", lower)
    if not m:
        # 'which 10 drives gained the most places': N of what a later superlative ranks
        m = re.search(r"\b(?:which|what)\s+(?P<n>\d{1,2}|" + "|".join(WORD_NUMBERS) + r")\s+[a-z]", lower)
        if m is None or not SUPERLATIVES & set(q.raw[q.word_at(m.end()):]):
            return None, 0
        n = to_number(m.group("n"))
        consumed.add(q.word_at(m.start("n")))
        return (n, 0) if n > 0 else (None, 0)
    n = to_number(m.group("n") or m.group("m"))
    consumed.update(range(q.word_at(m.start()), q.word_at(m.end())))
    words = m.group().split()
    direction = 1 if any(w in ASC_WORDS or w in ("bottom", "worst") for w in words) else (
        0 if words[0] in ("first", "last") else -1)
    return n, direction


ORDER_BY_COUNT = re.compile(r"\w+\s+(?:of|by) (?:the |their |its )?(?:count\b|number of\b|number\b)")


# "in ascending order of", "in order by" after another order word names the key itself.
ORDER_OF = re.compile(r"\border (?:of|by)\b")

ORDER_PHRASE = re.compile(r"\b(order(?:ed)?|sort(?:ed)?|rank(?:ed)?|arrange(?:d)?|organi[sz]ed|alphabetic(?:al|ally)?)\b"
                          r"(?:\s+\w+){0,6}")


def orders_here(q: Question, m: re.Match) -> bool:
    """An order phrase of `ORDER_PHRASE` asks an order: not 'order' the noun ('the customer who
    made an order most recently'), nor 'arranged'/'organized' as a verb whose object a superlative
    ranks ('the city that organized the most events')."""
    word, at = m.group(1), q.word_at(m.start())
    if word == "order":
        return asks_order(q, at)
    if word.startswith(("organi", "arrange")):
        return not (q.raw[at + 1:at + 2] in (["the"], ["a"]) and q.raw[at + 2:at + 3]
                    and q.raw[at + 2] in SUPERLATIVES | {"greatest", "number"})
    return True


def detect_order(q: Question, lower: str, mentions: list[Mention], fields: list[Field],
                 used: set[int]) -> list[tuple[object, int]]:
    """Explicit ordering phrases and measure superlatives ('oldest')."""
    m = next((m for m in ORDER_PHRASE.finditer(lower) if orders_here(q, m)), None)
    if m:
        window = lower[max(0, m.start() - 25):]  # "in descending order of", "ordered by X descending"
        direction = _direction(window)
        at = q.word_at(m.start())
        said = ORDER_OF.search(lower, m.end(1), m.start() + 80) if m.group(1) != "order" else None
        if said:  # "sort the names in ascending order of their price": the key follows 'order of'
            at = q.word_at(said.start())
        by = re.search(r"\bby\b", lower[m.start():m.start() + 60])
        if by:  # "sort the names by their age": the key follows 'by'
            at = q.word_at(m.start() + by.end())
            target = next((mm for mm in mentions if mm.start >= at), None)
            if target:
                keys = [target] + then_keys(q, mentions, target)
                if len(keys) > 1:  # the first key's direction is said before the second key
                    direction = _direction(lower[max(0, m.start() - 25):q.spans[keys[1].start][0]])
                if len(mentions) > 1:
                    used.update(k.start for k in keys)
                return [(target.field, aged_direction(window, target.field, direction))] + [
                    (k.field, _own_direction(q, k)) for k in keys[1:]]
        by_count = ORDER_BY_COUNT.match(lower, m.start())
        if by_count and not names_quantity(q, by_count, mentions):  # not 'order of number of officers'
            return [("count", direction)]
        target = next((mm for mm in mentions if mm.start > at), None)
        head = next((mm for mm in mentions if target and mm.start == target.end), None)
        if head is not None and (head.field.numeric or head.field.type == "date") and not target.field.numeric:
            target = head  # 'in ascending order of school enrollment': the compound's head orders
        shown = [mm for mm in mentions if mm.start not in used and mm.field.type == "string"]
        if target is None and re.search(r"\balphabetic", window) and shown:
            # 'names ... in alphabetic order': the names shown, not a filter's field ('reverse alphabetical
            # order', 'descending alphabetical order': from Z to A)
            return [(shown[0].field, direction)]
        if target is None:
            target = next((mm for mm in reversed(mentions) if mm.end <= at), None)
        if target:
            if target.start > at and len(mentions) > 1:
                used.add(target.start)  # "names in order of age": age orders, names are shown
            return [(target.field, aged_direction(window, target.field, direction))]
        if "alphabetic" in lower and mentions:
            return [(mentions[0].field, direction)]
    price = PRICE_PHRASE.search(lower)
    if price:
        f = measure_field(fields, "price")
        if f is not None:
            return [(f, -1 if price.group(1) == "most" else 1)]
    ranked = ranked_by(q, mentions, used)
    if ranked:
        return ranked
    for i, word in enumerate(q.raw):
        measure = MEASURE_SUPERLATIVES.get(word)
        if measure:
            # 'the latest open year', 'the longest working history': the field named right after
            adjacent = next((m for m in mentions if m.start == i + 1 and (m.field.measurable or m.field.type == "date")
                             and m.start not in used), None)
            if adjacent is None and (i + 1 == len(q.raw) or q.raw[i + 1] in ("and", "or", "of", "among", "in")):
                # 'the university that was founded the earliest': the date or year named just before
                j = i - 1 if i and q.raw[i - 1] == "the" else i
                adjacent = next((m for m in mentions if m.end == j and (m.field.measurable or m.field.type == "date")
                                 and m.start not in used), None)
            if adjacent is not None:
                used.add(adjacent.start)
                return [(adjacent.field, measure[1])]
            f = (dated_near(q, i, fields) if measure[0] in ("date", "year") else None) \
                or measure_field(fields, measure[0], False)
            if f is None and measure[0] == "length" and word == "shortest":
                f = measure_field(fields, "height")  # 'the shortest peak', where no length is stored
            if f is not None:
                return [(f, measure[1])]
            if measure[0] == "age":  # no age stored: the oldest was born (or founded) first
                f = birth_date(fields, mentions) or measure_field(fields, "year") or measure_field(fields, "date", False)
                if f is not None:
                    return [(f, -measure[1])]
    ordinal = time_ordinal(q, mentions)
    f = ordinal_date(q, ordinal[0], fields, mentions) if ordinal is not None else None
    if f is not None:  # 'the first asset acquired': the earliest by the date the words around it name
        return [(f, ordinal[1])]
    return []


def ordinal_date(q: Question, i: int, fields: list[Field], mentions: list[Mention]) -> Field | None:
    """The date 'first'/'last' at word `i` ranks by: a date of birth after 'born' ('the employee born
    first'), else the field of dates the words around it name (`dated_near`; a field of years is
    no date: 'the first author' ranks by no year-like number)."""
    if BIRTH_WORDS & set(q.raw[i - 1:i]):
        return birth_date(fields, mentions)
    f = dated_near(q, i, fields)
    return f if f is not None and f.dated else None


# 'first' and 'last' ranking in time ('the first asset acquired', 'the film released first', 'the
# customer who last made an order'), in the direction of their date.
ORDINALS = {"first": 1, "last": -1}
# Words after 'first'/'last' that make it no rank in time ('the first name', 'sorted first by', 'the first 3').
_NOT_IN_TIME = frozenset({"name", "names", "and", "or", "by", "of", "one", "ones", "time", "times"})


def time_ordinal(q: Question, mentions: list[Mention]) -> tuple[int, int] | None:
    """(position, direction) of the first 'first' or 'last' that may rank in time: not a word of a
    field's name ('first name', `First_Climbed`), not before a name, a list or a number ('first,
    middle and last names', 'sorted first by name', 'the first 3'), not an order's direction
    ('the highest listed first'). `ordinal_date` tells whether a date is named around it."""
    for i, word in enumerate(q.raw):
        if word not in ORDINALS or any(m.start <= i < m.end for m in mentions):
            continue
        after = q.raw[i + 1] if i + 1 < len(q.raw) else ""
        gap = q.text[q.spans[i][1]:q.spans[i + 1][0]] if after else ""
        if after in _NOT_IN_TIME or "," in gap or maybe_number(after) is not None \
                or q.raw[i - 1:i] and (q.raw[i - 1] in SUPERLATIVES or q.raw[i - 1] in _LISTED):
            continue
        return i, ORDINALS[word]
    return None


# Verbs before 'first' that place rows in an order ('listed first', 'shown first'): a direction, not a rank.
_LISTED = frozenset({"listed", "shown", "showing", "sorted", "ordered", "ranked", "arranged", "displayed", "appear",
                     "appears", "appearing", "come", "comes", "coming", "placed", "put"})


# Words every date or year field shares: they say nothing of which one.
DATE_WORDS = frozenset({"date", "year", "time", "day", "id"})


def dated_near(q: Question, i: int, fields: list[Field]) -> Field | None:
    """The date a superlative of time at word `i` ranks by ('the latest contact channel',
    'the customer who started a policy most recently', 'the earliest maintenance contract'):
    of the fields of dates or years, the one whose own name or enclosing arrays' names
    the most words around it say (the collection's name encloses them all; least nested
    first); None when no word says any."""
    near = {q.stems[j] for j in range(max(0, i - 4), min(len(q.raw), i + 5)) if j != i}

    def said(f: Field) -> int:
        names = set(f.words + f.context + tuple(split_name(f.collection)))
        return sum(any(word_match(w, n) >= 0.85 for w in near) for n in names - DATE_WORDS)
    dated = [(said(f), f) for f in fields if f.kind == "scalar" and (f.dated or f.years)]
    best = max((n for n, _ in dated), default=0)
    return min((f for n, f in dated if n == best), key=lambda f: (len(f.arrays), -f.present, f.mql)) if best else None


def aged_direction(window: str, key: Field, direction: int) -> int:
    """'sorted by date of birth, oldest first': the oldest of dates or years is the earliest
    (ascending), where the oldest of ages is the greatest — the direction `direction` read.
    A field named a date or a birth holds dates, whatever form they are written in."""
    aged = re.search(r"\b(oldest|youngest) first\b", window)
    if aged is None or not (key.dated or key.years or {"date", "year"} & set(key.words) or BIRTH_WORDS & set(key.words)):
        return direction
    return 1 if aged.group(1) == "oldest" else -1


def _direction(window: str) -> int:
    """-1 when the words of an order phrase say descending ('highest first', 'from old to new'), else 1."""
    return -1 if re.search(r"\b(?:descending|decreasing|desc|reverse|highest|largest|most|top)\b"
                           r"|\bfrom (?:the )?(?:old|high|large|big|most|new|late)\w* to\b"
                           r"|\b(?:" + "|".join(sorted(SUPERLATIVES - ASC_WORDS)) + r") first\b"
                           r"|\b(?:" + "|".join(sorted(ASC_WORDS)) + r") last\b", window) else 1


# Words that may follow a sort key before the next one: its direction, said after it.
_KEY_TRAILERS = frozenset({"in", "ascending", "descending", "asc", "desc", "increasing", "decreasing", "order",
                           "alphabetically", "alphabetical", "reverse"})
# Words between a sort key's links and the next key's mention ('then by the movie title').
_KEY_FILLERS = frozenset({"the", "their", "its", "his", "her"})
_DESCENDING = frozenset({"descending", "desc", "decreasing", "reverse"})


def then_keys(q: Question, mentions: list[Mention], first: Mention) -> list[Mention]:
    """'sorted by name, then by title, and then by rating': the keys after the first that
    'then (by)' or 'and by' adds, each mention right after its link (past a determiner or a
    word qualifying it: 'then by movie title'), in order."""
    keys, last = [], first
    while True:
        at = last.end
        while at < len(q.raw) and q.raw[at] in _KEY_TRAILERS:
            at += 1
        link = at + (q.raw[at:at + 1] == ["and"])
        if q.raw[link:link + 1] == ["then"]:
            link += 1 + (q.raw[link + 1:link + 2] == ["by"])
        elif link > at and q.raw[link:link + 1] == ["by"]:
            link += 1
        else:
            return keys
        while link < len(q.raw) and q.raw[link] in _KEY_FILLERS:
            link += 1
        nxt = next((m for m in mentions if link <= m.start <= link + 1), None)
        if nxt is None or nxt in keys or nxt is first:
            return keys
        keys.append(nxt)
        last = nxt


def _own_direction(q: Question, key: Mention) -> int:
    """The direction said right after a later sort key ('then by age descending'), else ascending."""
    at = key.end
    while at < len(q.raw) and q.raw[at] in _KEY_TRAILERS:
        if q.raw[at] in _DESCENDING:
            return -1
        at += 1
    return 1


# Words naming a date of birth ('DOB', 'Birth_Date', 'Born').
BIRTH_WORDS = frozenset({"dob", "birth", "birthday", "born", "birthdate"})


def birth_date(fields: list[Field], mentions: list[Mention]) -> Field | None:
    """The date of birth that says who is oldest: in the documents or elements the question's
    fields are read in ('the youngest student' among `DEPARTMENT.STUDENT`), else the least nested."""
    born = [f for f in fields if f.kind == "scalar" and BIRTH_WORDS & set(f.words)]
    grains = {m.field.arrays for m in mentions}
    return min(born, key=lambda f: (f.arrays not in grains, len(f.arrays), f.mql)) if born else None


def ranked_by(q: Question, mentions: list[Mention], used: set[int]) -> list[tuple[object, int]]:
    """'the three tallest mountains by prominence', 'the 5 best players in terms of
    points': a superlative whose measure is named after 'by' — that measure, in the
    superlative's direction (not the one the adjective names on its own)."""
    for i, word in enumerate(q.raw):
        if word not in SUPERLATIVES or word in ("most", "least"):
            continue
        for j in range(i + 1, min(i + 5, len(q.raw))):
            if q.raw[j] != "by":
                continue
            at = j + 1 + (q.raw[j + 1:j + 2] in (["the"], ["their"], ["its"]))
            target = next((m for m in mentions if m.start == at and m.field.measurable and m.start not in used), None)
            if target is not None:
                used.add(target.start)
                return [(target.field, 1 if word in ASC_WORDS else -1)]
    return []


def entity_limit(q: Question, entities: set[int], mentions: list[Mention],
                 taken: set[int] = frozenset()) -> int | None:
    """'the 5 books with the highest price', 'which 10 sellers ...': N ranked
    documents or values — a number right before the entity, or right after
    'which'/'the' before a field. A number another pass read (`taken`: the bound of
    'colleges with at least two players, sorted by name') limits nothing."""
    starts = {m.start for m in mentions}
    for i in range(len(q.raw) - 1):
        if i in taken:
            continue
        named = i + 1 in entities or i + 1 in starts and q.raw[i - 1:i] in (["which"], ["the"], ["what"])
        n = maybe_number(q.raw[i]) if named else None
        if isinstance(n, int) and n > 0:
            return n
    return None


def superlative_limit(q: Question, mentions: list[Mention] = ()) -> int | None:
    """1 when a superlative picks one ('the greatest average', 'the busiest'; any of `SUPERLATIVES`,
    or 'first'/'last' ranking in time: `time_ordinal`), unless the question ranks every row (`ranks_all`)."""
    if any(w in SUPERLATIVES or w in ("maximum", "minimum") for w in q.raw) or time_ordinal(q, mentions):
        if not ranks_all(q):
            return 1
    return None


def ranks_all(q: Question) -> bool:
    """"most common first", "highest first", explicit orderings and "list every X" rank every
    row; a superlative in them picks no one."""
    return any(w == "order" and asks_order(q, i) for i, w in enumerate(q.raw)) or bool(re.search(
        r"\b(?:sorted|ordered|arranged|organi[sz]ed)\b|\b(?:list|show|give) (?:every|all|each)\b"
        r"|\b(?:" + "|".join(sorted(SUPERLATIVES)) + r")(?:\s+\w+)?\s+(?:first|last)\b", q.text.lower()))


def default_order(ir: IR, key: Field | None) -> list[tuple[object, int]]:
    """Groups and documents come out in no defined order: when the question asks
    for none, list groups by their keys and documents by their identifier,
    ascending (the order a reader expects)."""
    if ir.limit:
        return []
    if ir.group_by:
        return [(k, 1) for k in ir.group_by]
    if ir.count or ir.distinct or ir.aggregates:
        return []
    return [(key, 1)] if key in ir.outputs else []


def sortable(ir: IR) -> list[tuple[object, int]]:
    """The sort keys the reading's rows can be ordered by (the rest would be dropped when
    rendered, leaving a superlative's limit over rows in no order): after grouping, a
    group key, an aggregate's measure, or the groups' count — a field of the counted
    elements ranks the groups by how many there are ('the city with the highest number of
    hosted events'); documents, by any field or array size, never by a count."""
    keys = ir.group_by  # (distinct values are listed after ranking their documents: `render._ranks_documents`)
    grouped = bool(keys or ir.aggregates)
    if ir.count and not ir.group_by:
        return []  # one number: nothing to order
    kept: list[tuple[object, int]] = []
    for key, direction in ir.sort:
        if ir.ranks_before_grouping(key):
            pass  # 'the average rating of the oldest movie': the documents ranked, then their elements measured
        elif grouped and isinstance(key, Field) and key not in keys \
                and not any(f is key for _, f in ir.aggregates):
            key = "count" if ir.count and key.arrays and not ir.aggregates else None
        elif key == "count" and not (grouped and ir.count) or isinstance(key, tuple) and grouped:
            key = None
        if key is not None and all(k != key for k, _ in kept):
            kept.append((key, direction))
    return kept
