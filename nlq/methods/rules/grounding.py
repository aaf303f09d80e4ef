"""Grounding words to the database: the collection, witnessed literals, attribute bags.

    resolve_collection(...)   the collection and its margin over the runner-up
    bind_witnesses(...)       equality filters on exact stored values and keys
    bind_bag_attributes(...)  a witnessed key of a `[{k, v}]` bag: flag, group key, aggregate or rank
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

from nlq.errors import NlqError
from nlq.text import word_spans
from nlq.text import STOPWORDS as TEXT_STOPWORDS
from nlq.methods.rules.vocabulary import (AGG_WORDS, ASC_WORDS, COUNT_PATTERNS, DATE_COMPARISONS, DESC_WORDS,
                                          IRREGULAR_PARTICIPLES, NEGATIONS, SYNONYMS)
from nlq.methods.rules.ir import Field, Filter, IR, Mention
from nlq.methods.rules.schema import lattice_to_mql, split_name
from nlq.methods.rules.question import (QUANTITY_WORDS, Question, denied, is_quoted, is_year, maybe_number, ordering_words,
                                        quantity_noun, to_number, word_match)


def resolve_collection(q: Question, schema: dict[str, list[Field]], mentions: list[Mention],
                       witnesses: list[dict]) -> tuple[list[tuple[str, float]], dict[str, set[int]]]:
    """The collections, best first, each with its margin over the best other one
    (negative for all but the first), and, per collection, the word positions
    that name the collection or an array entity."""
    if not schema:
        raise NlqError("the grounding index has no collections")
    scores, entity_positions = {}, {}
    for coll, fields in schema.items():
        positions: set[int] = set()
        score = 0.0
        coll_words = split_name(coll)
        for i, w in enumerate(q.stems):
            if any(word_match(w, cw) >= 0.8 for cw in coll_words):
                positions.add(i)
        # 'authors that have no books': a denied collection is the other side of a join
        asserted = {i for i in positions if not denied(q, i)}
        score += 2.0 * min(1.0, len(asserted) / max(1, len(coll_words))) if asserted else 0.0
        for f in fields:
            if f.kind == "array" and f.words:
                hits = {i for i, w in enumerate(q.stems) if word_match(w, f.words[-1]) >= 0.85}
                if hits:
                    positions |= hits
                    score += 0.6 / (1 + len(f.arrays) - 1) if f.arrays else 0.6
        best_by_span: dict[int, float] = {}
        for m in mentions:
            if m.field.collection == coll and m.field.kind != "array":
                best_by_span[m.start] = max(best_by_span.get(m.start, 0.0), min(m.score, 1.0))
        score += sum(best_by_span.values())
        for w in witnesses:
            if any(match.get("collection") == coll for match in w.get("matches", [])):
                score += 0.75
        scores[coll] = score
        entity_positions[coll] = positions
    ranked = sorted(scores, key=lambda c: (-scores[c], c))
    best = ranked[0]
    second = scores[ranked[1]] if len(ranked) > 1 else 0.0
    margin = 1.0 if scores[best] <= 0 and len(ranked) == 1 else (
        (scores[best] - second) / scores[best] if scores[best] > 0 else 0.0)
    others = [(c, (scores[c] - scores[best]) / scores[best] if scores[best] > 0 else -1.0) for c in ranked[1:]]
    return [(best, margin)] + others, entity_positions


# Words for a sex or gender, and the one-letter code a database stores for it ('female' -> "F").
GENDER_CODES = {"female": "F", "females": "F", "woman": "F", "women": "F", "girl": "F", "girls": "F",
                "male": "M", "males": "M", "man": "M", "men": "M", "boy": "M", "boys": "M"}


def coded_witnesses(q: Question, index: dict, collection: str, witnesses: list[dict]) -> list[dict]:
    """Witnesses for words a database stores as a conventional code: 'female
    students' where a string field of the collection holds "F" (and no
    witness already covers the word or the code). Read off the index's value entries."""
    covered = {str(w.get("term", "")).lower() for w in witnesses}
    covered |= {str(m.get("stored")) for w in witnesses for m in w.get("matches", []) if m.get("collection") == collection}
    found = []
    for word in dict.fromkeys(q.raw):
        code = GENDER_CODES.get(word)
        if code is None or word in covered or code in covered:
            continue
        matches = [m for m in index.get("values", {}).get(code.lower(), [])
                   if m.get("collection") == collection and m.get("stored") == code and m.get("kind") == "value"]
        if matches:
            found.append({"term": word, "hard": True, "matches": matches})
    return found


def bind_witnesses(q: Question, witnesses: list[dict], collection: str, schema_fields: list[Field],
                   mentions: list[Mention], consumed: set[int], entities: set[int] = frozenset(),
                   grain: str | None = None) -> list[Filter]:
    """Equality filters on exact stored forms for value-like literals in the question.

    A lowercase word is a literal only when its witness is hard (few stored
    locations) and the word does not name the collection or an array entity."""
    by_path = {f.path: f for f in schema_fields}
    by_mql = {f.mql: f for f in schema_fields}
    filters: list[Filter] = []
    for w in witnesses:
        term = str(w.get("term", ""))
        at = q.find(term)
        if at < 0 or at in consumed:
            continue
        end = at + max(1, len(word_spans(term)))
        quoted = is_quoted(q.text, q.spans[at][0], q.spans[end - 1][1])
        is_key = w.get("hard") and any(m.get("kind") == "key" and m.get("collection") == collection
                                       for m in w.get("matches", []))
        hard_literal = w.get("hard") and not set(range(at, end)) & (entities | ordering_words(q))
        if not (marked_literal(q, at, end) or is_key or hard_literal):
            continue  # a lowercase common word is not a literal
        # a word naming a field in full is that field; one naming part of a field's
        # name ('closed' of closed_at) is a value when a hard witness says so
        # ('Class B' is a value even where 'class' names a field: the longer reading wins)
        if any(set(range(at, end)) & set(range(m.start, m.end)) and (m.share == 1.0 or not w.get("hard"))
               and m.end - m.start >= end - at for m in mentions) and not quoted:
            continue
        candidates = []
        for match in w.get("matches", []):
            if match.get("collection") != collection:
                continue
            f = by_path.get(match.get("path")) or by_mql.get(lattice_to_mql(match.get("path", ""))[0])
            if f is None:
                continue
            if match.get("kind") == "key":
                near = min((abs(m.start - at) for m in mentions if f.mql in m.field.maps), default=50)
            else:
                near = min((abs(m.start - at) for m in mentions if m.field.mql == f.mql), default=99)
            # an exact stored value beats the year of a date ('the 1998 edition' is edition 1998)
            partial = match.get("part") == "year"
            # 'orders in 1999' when orders are counted: the date of an order, not of the customer
            outside = grain is not None and grain not in f.arrays
            # 'campuses that opened in 1958': the campus's own year before one of elements never named
            unnamed = bool(f.arrays) and not in_named_array(q, f, schema_fields)
            candidates.append((near, outside, unnamed, partial, -int(match.get("frequency", 0)), f.mql, f, match))
        if not candidates:
            continue
        candidates.sort(key=lambda c: c[:6])
        f, match = candidates[0][-2:]
        bare_number = match.get("kind") != "key" and match.get("part") != "year" and re.fullmatch(
            r"-?\d+(?:\.\d+)?", term)
        if bare_number and not (any(m.field.mql == f.mql and (0 <= at - m.end <= 2 or m.start == end) for m in mentions)
                                or is_year(term) and (f.numeric or f.years)):
            continue  # a bare number binds only next to its field ('major 50', '1 credit'), unless it is a year
        negated = denied_before(q, at) or excluded(q, at)
        if match.get("kind") == "key":
            filters.append(Filter(f, "$exists", match["stored"], at, key_of=f))
        elif match.get("part") == "year" and f.type == "date":
            year = int(term)
            filters.append(Filter(f, "$gte", datetime(year, 1, 1, tzinfo=timezone.utc), at))
            filters.append(Filter(f, "$lt", datetime(year + 1, 1, 1, tzinfo=timezone.utc), at))
        else:
            before = DATE_COMPARATORS.get(" ".join(q.raw[max(0, at - 2):at])) or DATE_COMPARATORS.get(
                q.raw[at - 1] if at else "")
            op = before if before and f.type in ("date", "string") else "$ne" if negated else "$eq"
            filters.append(Filter(f, op, match["stored"], at))
        consumed.update(range(at, end))
    return _merge_equalities(filters, q)


def marked_literal(q: Question, at: int, end: int) -> bool:
    """The words `at:end` read as a stored value by their form alone: quoted, more
    than one word, or written with a capital or a digit ('Cash', 'CA', 'Class B') —
    not a lowercase common word ('states', 'order'), which a hard witness may still make one."""
    original = q.text[q.spans[at][0]:q.spans[end - 1][1]]
    return is_quoted(q.text, q.spans[at][0], q.spans[end - 1][1]) or end - at > 1 or bool(re.search(r"[A-Z0-9]", original))


def explained_here(q: Question, w: dict, covered: set[int]) -> bool:
    """A witness whose words a field or entity of the chosen collection already explains
    ('states' of a `born_state`), unmarked as a value: a literal only another collection
    stores ("State", a department's name) is no reason to join it."""
    term = str(w.get("term", ""))
    at = q.find(term)
    if at < 0:
        return False
    end = at + max(1, len(word_spans(term)))
    return bool(set(range(at, end)) & (covered | ordering_words(q))) and not marked_literal(q, at, end)


# A comparator right before a witnessed date ('joined after 7th September, 1987').
DATE_COMPARATORS = dict(DATE_COMPARISONS)


def _merge_equalities(filters: list[Filter], q: Question | None = None) -> list[Filter]:
    """Several equality literals on one path mean any of them: `$in`; said as 'both A
    and B', every one of them: `$all` (of the values one document, or one group, holds)."""
    merged: list[Filter] = []
    for f in filters:
        same = next((g for g in merged if g.field.mql == f.field.mql and g.op in ("$eq", "$in", "$all")
                     and f.op == "$eq"), None)
        if same is None:
            merged.append(f)
        else:
            values = same.value if same.op in ("$in", "$all") else [same.value]
            both = same.op == "$all" or same.op == "$eq" and q is not None and conjoined(q, same.start, f.start)
            same.joined_by_and = q is not None and and_joined(q, same.start, f.start)  # (all values said so far)
            same.op, same.value = "$all" if both else "$in", values + [f.value]
    return merged


def conjoined(q: Question, first: int, second: int) -> bool:
    """'both A and B', 'both the A committee and the B committee': 'both' shortly before
    the first value, 'and' (no 'or') between the two; or the second value added as one
    more ('A, as well as B', 'by A and also by B')."""
    if not 0 <= first < second:
        return False
    between = q.raw[first:second]
    if "or" in between:
        return False
    if "both" in q.raw[max(0, first - 6):first] and "and" in between:
        return True
    text = f" {' '.join(between)} "
    return " as well as " in text or " and also " in text


def and_joined(q: Question, first: int, second: int) -> bool:
    """'in the years 2014 and 2015': 'and' between the two values, no 'or' ('either', 'any')
    offering them as alternatives, no 'between' making them the ends of a range."""
    if not 0 <= first < second:
        return False
    return "and" in q.raw[first:second] and not {"or", "either", "any", "between"} & set(
        q.raw[max(0, first - 3):second])


def number_alternatives(q: Question, filters: list[Filter], consumed: set[int]) -> list[Filter]:
    """'aged 36 or 37', 'in department 70 or 90': numbers joined by 'or' to a
    bound number are alternatives on its field (`$in`)."""
    out = []
    for f in filters:
        values, j = [f.value], f.start + 1
        while f.op == "$eq" and isinstance(f.value, (int, float)) and j + 1 < len(q.raw) \
                and q.raw[j] == "or" and isinstance(maybe_number(q.raw[j + 1]), (int, float)):
            values.append(to_number(q.raw[j + 1]))
            consumed.update((j, j + 1))
            j += 2
        out.append(f if len(values) == 1 else Filter(f.field, "$in", values, f.start))
    return out


# Phrases that set values aside ('leaving out those who said "none"', 'an origin different from Beijing').
EXCLUSION = re.compile(r"\b(?:leaving out|leave out|excluding|except(?: for)?|other than|apart from|not counting|"
                       r"ignoring|besides|differ(?:s|ent|ing)? from|unequal to)\b")


# Words that end the clause a negation governs ('not NYY and X': X is asserted).
CLAUSE_ENDS = frozenset({"and", "or", "but", "who", "which", "that", "whose", "where", "while", "with"})


def denied_before(q: Question, at: int, reach: int = 8) -> bool:
    """A negation governs the literal at word `at`: within `reach` words before
    it, in the same clause ('who are not part of the NYY team')."""
    for i in range(at - 1, max(-1, at - reach - 1), -1):
        if q.raw[i] in NEGATIONS:
            return True
        if q.raw[i] in CLAUSE_ENDS and not (q.raw[i] == "with" and i >= 2 and q.raw[i - 2] in NEGATIONS) \
                or set(q.text[q.spans[i][1]:q.spans[i + 1][0]]) & set(",;:()"):
            return False  # ('not affiliated with the X': the negated verb's own 'with')
    return False


def excluded(q: Question, at: int) -> bool:
    """An exclusion phrase opens the clause of the literal at word `at` (within 9 words)."""
    start = q.spans[max(0, at - 9)][0]
    return any(q.word_at(m.end()) <= at for m in EXCLUSION.finditer(q.text.lower(), start, q.spans[at][0]))


def witnessed_values(q: Question, witnesses: list[dict], collection: str, fields: list[Field]) -> set[int]:
    """Word positions of the literals a field of this collection stores (a hard witness,
    or one written capitalized, quoted or with digits): values the question names."""
    paths = {f.path for f in fields}
    out = set()
    for w in witnesses:
        term = str(w.get("term", ""))
        at = q.find(term)
        if at < 0 or not any(m.get("collection") == collection and m.get("kind") == "value"
                             and m.get("path") in paths for m in w.get("matches", [])):
            continue
        end = at + max(1, len(word_spans(term)))
        start, stop = q.spans[at][0], q.spans[end - 1][1]
        if w.get("hard") or re.search(r"[A-Z0-9]", q.text[start:stop]) or is_quoted(q.text, start, stop):
            out.update(range(at, end))
    return out


def witnessed_years(witnesses: list[dict], collection: str, fields: list[Field],
                    q: Question | None = None) -> dict[str, Field]:
    """Year literals and the field of this collection storing them: an exact
    numeric value ('edition 1990') before the year of a date; among several, one in
    an array whose elements the question names ('degrees granted between 1998 and
    2002': the year of each degree, not the document's own), else the least nested."""
    by_path = {f.path: f for f in fields}
    years = {}
    for w in witnesses:
        term = str(w.get("term", ""))
        if not is_year(term):
            continue
        found = [(match.get("part") == "year", by_path[match["path"]]) for match in w.get("matches", [])
                 if match.get("collection") == collection and match.get("kind") == "value"
                 and match.get("path") in by_path and (by_path[match["path"]].numeric or by_path[match["path"]].years
                                                      or match.get("part") == "year")]
        if found:
            years[term] = min(found, key=lambda c: (c[0], not in_named_array(q, c[1], fields),
                                                    len(c[1].arrays), c[1].mql))[1]
    return years


def in_named_array(q: Question | None, f: Field, fields: list[Field]) -> bool:
    """Field `f` lies in an array whose elements some word of the question names (not a word
    naming the collection's own documents: 'branches' in `branch` beside its
    `membership_register_branch`)."""
    if q is None or not f.arrays:
        return False
    array = next((a for a in fields if a.mql == f.arrays[-1] and a.kind == "array" and a.words), None)
    own = split_name(f.collection)[-1:]
    return array is not None and any(names_elements(stem, array) and not (own and word_match(stem, own[0]) >= 0.85)
                                     for stem in q.stems)


def array_named(q: Question, at: int, fields: list[Field], top_level: bool = True) -> Field | None:
    """The array field whose name is the word at `at` ('two flights' -> flight[]);
    by default only top-level arrays, whose size is a property of the document."""
    if at >= len(q.stems):
        return None
    named = [f for f in fields if f.kind == "array" and f.words and names_elements(q.stems[at], f)
             and (not top_level or "." not in f.mql)]
    return min(named, key=lambda f: (len(f.arrays), f.mql)) if named else None


def array_derived(q: Question, at: int, fields: list[Field]) -> Field | None:
    """The top-level array whose head noun the word at `at` is derived from, the verb or
    the activity ('rated' of `Rating`, 'tweeted' of `tweets`, 'coaching' of `player_coach`,
    'gaming' of `Plays_Games`, 'entrepreneurship' of `entrepreneur`), or said in the name's
    place ('sports' of `SportsInfo`, whose last word names no element)."""
    if at >= len(q.stems):
        return None
    root = _bare(q.stems[at])
    named = [f for f in fields if f.kind == "array" and f.words and "." not in f.mql
             and len(_head_word(f)) >= 4 and _bare(_head_word(f)) == root]
    return min(named, key=lambda f: f.mql) if named and len(root) >= 3 else None


# Verb and noun endings undone to compare a word with the noun it derives from.
_DERIVATIONS = ("ship", "ing", "ial", "ed", "es", "s", "e")


def _bare(word: str) -> str:
    """The word without one derivational or inflectional ending ('rated', 'rating' -> 'rat')."""
    return next((word[:-len(e)] for e in _DERIVATIONS if word.endswith(e) and len(word) - len(e) >= 3), word)


def names_elements(stem: str, f: Field) -> bool:
    """The word names the elements of array `f`: its name's last word, or, when that word names
    the documents holding it, the word before ('assets' for `Asset_Parts` in `Parts`, a link
    array whose elements each name an asset)."""
    if word_match(stem, f.words[-1]) >= 0.85:
        return True
    own = split_name(f.collection)[-1:]
    inner = [w for w in f.words[:-1] if w not in _NAME_TAILS]
    return bool(inner and own) and word_match(f.words[-1], own[0]) >= 0.85 and word_match(stem, inner[-1]) >= 0.85


def quantity_mentions(q: Question, fields: list[Field], mentions: list[Mention], entities: set[int],
                      collection: str) -> tuple[list[Mention], set[int]]:
    """'how many customers', 'the number of rooms', 'the most shops', where a document stores
    its `no_of_customers`, `room_count`, `Num_of_Shops` (`quantity_noun`): the noun a count
    phrase or a counting superlative ends on names that stored quantity, not things to count
    — one word the field's name would not match alone. The mentions with those (and the
    positions still naming an entity) are returned. Not when the noun names the collection
    (its documents are counted), when the question reads the elements of an array the noun
    names (a condition or a value of each: they are counted), nor when two quantities count it."""
    lower = q.text.lower()
    starts = [q.word_at(c.end()) for c in COUNT_PATTERNS.finditer(lower)]
    starts += [i + 1 for i, w in enumerate(q.raw) if w in ("most", "fewest", "least")
               and q.raw[i + 1:i + 2] != ["number"]]
    own = split_name(collection)[-1:]
    out, named = list(mentions), set()
    for start in starts:
        at = counted_noun(q, start)
        found = [f for f in fields if at is not None and _names_noun(q, at, quantity_noun(f))]
        array = array_named(q, at, fields, top_level=False) if at is not None else None
        found = found or own_quantity(array, fields)
        if len(found) != 1 or any(word_match(q.stems[at], w) >= 0.85 for w in own):
            continue
        f = found[0]
        if array is not None and f not in own_quantity(array, fields) and (array.mql in f.arrays or any(
                array.mql in m.field.arrays and m.share >= 0.8 and m.field is not f for m in mentions)):
            continue  # (a quantity inside each element counts something of it: 'bookings', `booked_count`)
        covering = [m for m in out if m.start <= at < m.end]
        if any(m.field is not f for m in covering):
            continue
        span = (min(m.start for m in covering), max(m.end for m in covering)) if covering else (at, at + 1)
        out = [m for m in out if m not in covering] + [Mention(f, span[0], span[1], 1.0, 1.0)]
        named.add(at)
    return sorted(out, key=lambda m: m.start), entities - named


def element_numbers(array: Field, fields: list[Field]) -> list[Field]:
    """The numbers each element of `array` stores that measure something: no identifier, no year."""
    return [f for f in fields if f.kind == "scalar" and f.arrays[-1:] == (array.mql,) and f.numeric
            and "id" not in f.words and not f.years]


def own_quantity(array: Field | None, fields: list[Field]) -> list[Field]:
    """The number each element of an array holds under the array's own name (`degrees[].Degrees`,
    `faculty[].Faculty`: how many degrees, faculty that element counts), when it is the one."""
    if array is None:
        return []
    own = [f for f in fields if f.kind == "scalar" and f.measurable and f.arrays[-1:] == (array.mql,)
           and f.words == array.words]
    return own if len(own) == 1 else []


def participle_quantities(q: Question, fields: list[Field], mentions: list[Mention], entities: set[int],
                          collection: str) -> tuple[list[Mention], set[int], set[int], set[int]]:
    """'the number of games played', 'the total amount paid', 'the number of years they have
    worked', where a document stores `GamesPlayed`, `amount_paid`, `Year_of_Work`: the noun a
    count phrase or a statistic reads and the participle after it (right after, or past a short
    clause: 'they have', 'were') name that stored number together — it is read, nothing is
    counted. Returns the mentions with it, the positions still naming an entity, the count
    phrases (by first word) so read, and the positions where two stored numbers fit the words
    equally (no reading is chosen: they are left unresolved). Not when the noun names the
    collection (its documents are counted)."""
    lower, own = q.text.lower(), split_name(collection)[-1:]
    triggers = [(q.word_at(c.start()), q.word_at(c.end())) for c in COUNT_PATTERNS.finditer(lower)] + [
        (i, i + 1) for i, w in enumerate(q.raw) if w in AGG_WORDS]
    out, named, read, unsure = list(mentions), set(), set(), set()
    for trigger, start in triggers:
        at = counted_noun(q, start)
        if at is not None and at > start and q.raw[at] in IRREGULAR_PARTICIPLES:
            at -= 1  # ('amount paid': the noun phrase ends before an irregular participle too)
        j = _participle_after(q, at) if at is not None else None
        if j is None or any(word_match(q.stems[at], w) >= 0.85 for w in own):
            continue
        if any(maybe_number(w) is not None for w in q.raw[j + 1:j + 4]):
            continue  # 'products priced at 180 or more': a condition on the number, not the number asked
        # a participle naming the number alone does so right after its noun, or as the verb a
        # 'how many' asks about ('how many students are enrolled'); the noun of an entity counts
        # its elements unless it names the number too ('the number of products manufactured')
        alone = j > at + 1 and not lower[q.spans[trigger][0]:].startswith("how many") or at in entities
        fitting = [c for c in _participle_fields(q, range(trigger, at + 1), j, fields) if c[2] < j or not alone]
        best = [(f, first) for f, n, first in fitting if n == fitting[0][1]]
        if len({f.mql for f, _ in best}) > 1:
            unsure.update(range(start, j + 1))  # two stored numbers fit the words equally
            continue
        if not best:
            continue
        f, first = best[0]
        first = min(first, at)
        covering = [m for m in out if first <= m.start <= j or m.start <= first < m.end]
        if any(m.field is not f and m.share == 1.0 for m in covering):
            continue
        out = [m for m in out if m not in covering] + [Mention(f, first, j + 1, 1.0, 1.0)]
        named.update(range(first, j + 1))
        if q.raw[trigger] not in AGG_WORDS:
            read.add(trigger)
    return sorted(out, key=lambda m: m.start), entities - named, read, unsure


# Words of a short clause between a noun and its participle ('the years they have worked').
PARTICIPLE_CLAUSE = frozenset({"that", "which", "who", "they", "he", "she", "it", "we", "you", "have", "has",
                               "had", "been", "be", "is", "are", "was", "were"})


# Words of a stored quantity's name that say it is a quantity, not what it counts.
QUANTITY_NAME_WORDS = QUANTITY_WORDS | {"amount", "quantity", "total", "of"}


def _participle_after(q: Question, at: int) -> int | None:
    """The participle right after word `at` or past a short clause ('games played', 'years they
    have worked'), or None."""
    for j in range(at + 1, min(at + 5, len(q.raw))):
        if is_participle(q.raw[j]):
            return j
        if q.raw[j] not in PARTICIPLE_CLAUSE:
            return None
    return None


def is_participle(word: str) -> bool:
    return word in IRREGULAR_PARTICIPLES or len(word) >= 5 and word.endswith("ed")


def participle_names(word: str, field_word: str) -> bool:
    """A participle names a word of a field's name by its root ('hired' hire, 'paid' payment, 'sold' sale)."""
    forms = IRREGULAR_PARTICIPLES.get(word, (word,))
    return any(word_match(form, field_word) >= 0.8 or word_match(field_word, form) >= 0.8 for form in forms)


def _participle_fields(q: Question, said: range, j: int, fields: list[Field]) -> list[tuple[Field, int, int]]:
    """The stored numbers whose name the words `said` and the participle at `j` say in full (its
    quantity words aside), the participle one of them: (field, how many words say it, the first
    word of `said` that does), most first."""
    found = []
    for f in fields:
        if f.kind != "scalar" or not f.measurable or "id" in f.words:
            continue
        words = [w for w in f.words if w not in QUANTITY_NAME_WORDS]
        by_participle = {w for w in words if participle_names(q.raw[j], w)}
        saying = {i: {w for w in words if word_match(q.stems[i], w) >= 0.85} for i in said}
        by_noun = set().union(*saying.values())
        if by_participle and set(words) <= by_participle | by_noun:
            first = min((i for i, ws in saying.items() if ws), default=j)
            found.append((f, len(by_noun) + len(by_participle), first))
    return sorted(found, key=lambda c: -c[1])


# Words between a count phrase and the noun it counts ('the number of the audiences', 'how many total rooms').
COUNT_FILLERS = frozenset({"the", "a", "an", "their", "its", "his", "her", "all", "of", "total", "overall"})


def counted_noun(q: Question, start: int) -> int | None:
    """The last word of the noun phrase from `start` on (after `COUNT_FILLERS`): its head,
    the words before it qualifiers ('furniture components'); a participle ends it ('shares
    transacted')."""
    while start < len(q.raw) and q.raw[start] in COUNT_FILLERS:
        start += 1
    end = None
    for j in range(start, min(start + 3, len(q.raw))):
        word = q.raw[j]
        if not word.isalpha() or word in TEXT_STOPWORDS or j > start and word.endswith(("ed", "ing")):
            break
        end = j
    return end


def _names_noun(q: Question, at: int, noun: tuple[str, ...]) -> bool:
    """The words ending at `at` say `noun` (a stored quantity's counted noun)."""
    if not noun or at + 1 < len(noun):
        return False
    said = q.stems[at + 1 - len(noun):at + 1]
    return all(word_match(a, b) >= 0.9 for a, b in zip(said, noun))  # the noun itself, not a kin word


def array_of_subject(q: Question, at: int, fields: list[Field], subject_at: int) -> Field | None:
    """The array the word at `at` names inside the entity the word at `subject_at` names
    ('customers who have some loans', customers the elements of `customer[]`: each
    customer's own `customer.loan[]`, not the document's `loan[]`), or None. The subject may
    be a compound noun's modifier ('asset models that have ...': the elements of `Assets`)."""
    if subject_at < 0 or at >= len(q.stems):
        return None
    subject = array_named(q, subject_at, fields, top_level=False) or (
        array_named(q, subject_at - 1, fields, top_level=False) if subject_at >= 1 else None)
    if subject is None:
        return None
    named = [f for f in fields if f.kind == "array" and f.words and f.mql.startswith(subject.mql + ".")
             and word_match(q.stems[at], f.words[-1]) >= 0.85]
    return min(named, key=lambda f: (len(f.arrays), f.mql)) if named else None


def array_phrase(q: Question, at: int, fields: list[Field], top_level: bool = True) -> tuple[Field, int] | None:
    """(array, end) of the array a noun phrase starting at `at` names, its head noun last:
    'players' (`array_named`), 'drama workshop groups' (`Drama_Workshop_Groups`), 'contact
    individuals' (`Organization_Contact_Individuals`), 'members' (`Member_of`, whose last
    word is no noun); a word before the head must name a word of the array too."""
    found = array_named(q, at, fields, top_level)
    if found is not None:
        return found, at + 1
    arrays = [f for f in fields if f.kind == "array" and f.words and (not top_level or "." not in f.mql)]
    for end in range(at + 1, min(at + 4, len(q.stems)) + 1):
        head = q.stems[end - 1]
        named = [f for f in arrays if word_match(head, _head_word(f)) >= 0.85
                 and all(any(word_match(w, fw) >= 0.8 for fw in f.words) for w in q.stems[at:end - 1])]
        if named:
            return min(named, key=lambda f: (len(f.arrays), f.mql)), end
    return None


# Words that end a field's name without naming what it holds ('Member_of').
_NAME_TAILS = frozenset({"of", "in", "for", "by", "to", "at", "on", "list", "info", "details", "data"})


def _head_word(f: Field) -> str:
    """The noun a field's name ends on: its last word that is no preposition or filler."""
    return next((w for w in reversed(f.words) if w not in _NAME_TAILS), f.words[-1])


def measure_field(fields: list[Field], measure: str, numeric: bool = True) -> Field | None:
    """The field a measure word names ('price' also by 'cost'; 'year' also a field
    whose stored values are calendar years, such as `Founded`), least nested first;
    by default only numeric fields."""
    words = set(SYNONYMS.get(measure, (measure,)))
    named = [f for f in fields if (f.numeric or f.years or not numeric and f.type in ("date", "string"))
             and (words & set(f.words) or measure == "year" and f.years)]
    # ('Year_of_Work' holding 6..21 is no year a date is compared with, beside `Year_of_Founded`)
    return min(named, key=lambda f: (measure == "year" and not f.years, len(f.arrays), -f.present, f.mql)
               ) if named else None


def year_field(q: Question, at: int, fields: list[Field]) -> Field | None:
    """The field of calendar years a year compared at word `at` is one of: the one a word
    shortly before names ('members registered after 2015': `Register_Year`, beside the
    branch's `Open_year`), else one in an array whose elements the question names ('degrees
    granted between 1998 and 2002': each degree's year, not the campus's), else
    `measure_field`'s year."""
    near = range(max(0, at - 3), at)
    named = [f for f in fields if f.years and any(word_match(q.stems[i], w) >= 0.85 for i in near
                                                  for w in f.words if w != "year")]
    named = named or [f for f in fields if f.years and in_named_array(q, f, fields)]
    return min(named, key=lambda f: (len(f.arrays), f.mql)) if named else measure_field(fields, "year")


# Comparator words that place a year in time ('built before 2010'): a year, not a quantity.
TEMPORAL_COMPARATORS = frozenset({"before", "after", "since", "earlier", "later", "until", "prior"})


def number_fits(f: Field, value, temporal: bool = False, percent: bool = False) -> bool:
    """Whether a compared number can be a value of the field: a year placed in
    time ('before 2010') is one of a field of years, and only a year is; a percentage
    ('90%') one of a field whose witnessed numbers lie within 0..100; any other number fits."""
    if temporal and is_year(str(value)):
        return f.years
    if f.years and not is_year(str(value)):
        return False  # 'launched in 2002 or with more than 32 MiB': a field of years holds no 32
    if percent:
        return f.span is not None and f.span[0] >= 0 and f.span[1] <= 100
    return True


def stored_number(f: Field, value):
    """A compared number in the form the field stores it: a year of a field of years
    written as text ("2010") is that text, which orders as the years do; so is a number
    compared with a field of digits written as text ('days held under 100': "100")."""
    spelled = f.years and is_year(str(value)) or f.numeric_text
    return str(value) if spelled and f.type == "string" else value


def object_named(q: Question, at: int, fields: list[Field]) -> Mention | None:
    """The embedded-document field named in full from word `at`, as a mention."""
    for f in fields:
        n = len(f.words)
        if f.kind != "object" or f.path.endswith("[]") or not n or at + n > len(q.stems):
            continue
        if all(word_match(w, fw) >= 0.85 for w, fw in zip(q.stems[at:at + n], f.words)):
            return Mention(f, at, at + n, 1.0)
    return None


def eponymous_field(q: Question, at: int, fields: list[Field], collection: str) -> Field | None:
    """The top-level field named like the collection, when the word at `at` names both."""
    head = tuple(split_name(collection)[-1:])
    if not head or at >= len(q.stems) or word_match(q.stems[at], head[0]) < 0.85:
        return None
    return next((f for f in fields if f.words == head and f.kind == "scalar" and not f.arrays), None)


BAG_KEY_WORDS = frozenset({"k", "key", "name", "attribute", "attr", "property", "field"})


BAG_VALUE_WORDS = frozenset({"v", "value", "val"})


def bag_value(key: Field, fields: list[Field]) -> Field | None:
    """The value field paired with a bag's key field (`attributes[].k` -> `attributes[].v`):
    an array whose elements hold exactly a string key and a value."""
    if not key.arrays or not key.words or key.words[-1] not in BAG_KEY_WORDS:
        return None
    element = key.path.rsplit(".", 1)[0] + "."
    siblings = [f for f in fields if f.path.startswith(element) and "." not in f.path[len(element):]]
    values = [f for f in siblings if f is not key and f.words and f.words[-1] in BAG_VALUE_WORDS]
    return values[0] if len(siblings) == 2 and len(values) == 1 else None


def bind_bag_attributes(q: Question, ir: IR, fields: list[Field], limit_direction: int) -> None:
    """A witnessed key of an attribute bag names an attribute, not a value: it is
    grouped by ('per colour'), aggregated ('average weight'), ranked ('the
    highest weight', 'top 5 by weight'), or else a flag the documents carry
    ('products marked fragile': `{$elemMatch: {k, v: true}}`). In the first
    three roles the bag is unwound, the pair kept by its key, and its value read."""
    for f in list(ir.filters):
        value = bag_value(f.field, fields) if f.op == "$eq" else None
        if value is None:
            continue
        role = _bag_role(q, f.start, ir, limit_direction)
        attribute = Field(**{**value.__dict__, "words": tuple(split_name(str(f.value)))})
        if role is None:
            if "bool" in value.types:
                array = next(g for g in fields if g.mql == f.field.arrays[-1] and g.kind == "array")
                pair = {f.field.mql.rsplit(".", 1)[1]: f.value, value.mql.rsplit(".", 1)[1]: True}
                ir.filters[ir.filters.index(f)] = Filter(array, "$elemMatch", pair, f.start)
            continue
        op, direction = role
        if op == "group":
            ir.group_by.append(attribute)
        elif op == "sort":
            ir.sort = [(attribute, direction)]
            ir.outputs.append(attribute)
        else:
            ir.aggregates.append((op, attribute))
        if op != "group" and attribute.mixed_numeric:
            ir.filters.append(Filter(attribute, "$type", "number", f.start))


def _bag_role(q: Question, at: int, ir: IR, limit_direction: int) -> tuple[str, int] | None:
    """How the attribute at word `at` is used, from the words just before it."""
    before = [w for w in q.raw[max(0, at - 3):at] if w not in ("the", "a", "an", "recorded", "stated", "their")]
    last = before[-1] if before else ""
    if last in ("each", "per", "every", "which", "what") or before[-2:] == ["by", "each"]:
        return ("group", 1)  # 'per colour', 'which colours': the attribute's values
    if last == "by" and not ir.limit:
        return ("group", 1)
    if last == "by" or last in DESC_WORDS or last in ASC_WORDS:
        direction = -1 if last in DESC_WORDS else 1 if last in ASC_WORDS else (limit_direction or -1)
        return ("sort", direction)
    if AGG_WORDS.get(last) in ("$avg", "$sum"):
        return (AGG_WORDS[last], 0)
    return None
