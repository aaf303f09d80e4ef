"""The question: its words (one tokenizer, `nlq.text.word_spans`) and the spans naming fields.

    Question.of(text)           raw words, stems and character spans
    mention_fields(words, schema)  every span of consecutive words naming a lattice path
    meaningful_mentions / select_mentions  the non-overlapping mentions of one collection
"""

from __future__ import annotations

import re
import functools
from dataclasses import dataclass, replace

from nlq.text import STOPWORDS as TEXT_STOPWORDS
from nlq.text import normalize, word_spans
from nlq.methods.rules.paraphrase import canonical
from nlq.methods.rules.vocabulary import (COMPOUND_WORDS, DISTINCT_WORDS, RELATED_ROOTS, SUPERLATIVES, SYNONYMS,
                                          WORD_NUMBERS)
from nlq.methods.rules.ir import Field, Mention
from nlq.methods.rules.schema import split_name


def plain(word: str) -> str:
    """A word as the rules compare it: lowercase, one apostrophe form (don’t ->
    don't), a number without thousands separators (1,000 -> 1000)."""
    word = word.lower().replace("’", "'").replace("`", "'")
    return word.replace(",", "") if word[:1].isdigit() else word


@dataclass
class Question:
    """The question, its general rephrasings rewritten (`paraphrase.canonical`),
    as parallel word lists: raw lowercase words and normalized stems."""

    text: str
    raw: list[str]
    stems: list[str]
    spans: list[tuple[int, int]]  # character span of each word in `text`

    @classmethod
    def of(cls, text: str) -> "Question":
        text = canonical(text)
        found = word_spans(text)
        raw = [plain(word) for word, _, _ in found]
        return cls(text, raw, [normalize(w) for w in raw], [(start, end) for _, start, end in found])

    def word_at(self, char: int) -> int:
        """Index of the first word starting at or after a character offset."""
        for i, (s, _) in enumerate(self.spans):
            if s >= char:
                return i
        return len(self.spans)

    def find(self, phrase: str, start: int = 0) -> int:
        """Word index where the words of `phrase` occur (case-insensitive), or -1."""
        target = [normalize(plain(w)) for w, _, _ in word_spans(phrase)]
        n = len(target)
        for i in range(start, len(self.stems) - n + 1):
            if self.stems[i:i + n] == target:
                return i
        return -1


def names_quantity(q: Question, count: re.Match, mentions: list[Mention]) -> bool:
    """'the number of police officers' where `Police_officers` is a stored number, 'the number
    of audience' where `Num_of_Audience` is: the phrase names that field, it counts nothing."""
    if not count.group().endswith("of"):
        return False
    at = q.word_at(count.end())  # ('the number of audience': `Num_of_Audience` named with its 'number of')
    return any(m.start <= at < m.end and m.share >= 0.8 and m.field.measurable and "id" not in m.field.words
               for m in mentions)


# Words that make a field's name a stored count ('no_of_customers', 'Num_Employees', 'room_count').
QUANTITY_WORDS = frozenset({"num", "no", "number", "count", "cnt", "nbr"})


def quantity_noun(f: Field) -> tuple[str, ...]:
    """What a stored quantity counts: `no_of_customers`, `Num_Employees`, `room_count`,
    `headCount` hold a number of customers, employees, rooms, heads (the name's other
    words); () for any other field. A number named `<X>_number` identifies an X
    (`apt_number`, `train_number`): it counts nothing."""
    words = f.words
    if f.kind != "scalar" or not f.measurable or len(words) < 2 or "id" in words:
        return ()
    if words[-1] in ("count", "cnt") or words[0] in QUANTITY_WORDS:
        return tuple(w for w in words if w not in QUANTITY_WORDS and w != "of")
    return ()


@functools.lru_cache(maxsize=1 << 16)  # a pure function of two words, called per (field, word) pair
def word_match(q: str, f: str) -> float:
    """How well a question word names a field word (1 exact, <1 partial, 0 none)."""
    if q == f or q == f + "s" and len(f) <= 3 or q == f + "e" and f.endswith("s") or same_noun(q, f):
        return 1.0  # 'ids' is left plural by the normalizer, 'buses' becomes 'buse'
    if len(f) >= 2 and len(q) >= 4 and q.startswith(f) and len(f) >= 3:
        return 0.8  # 'student' ~ 'stu'
    if q[:1] == f[:1] and skeleton(f, q):
        return 0.8  # 'quantity' ~ 'qty', 'department' ~ 'dept'
    if len(q) >= 4 and len(f) >= 4 and (q.startswith(f[:4]) and f.startswith(q[:4])) and _close(q, f):
        return 0.85  # 'opening' ~ 'openning'
    if f in SYNONYMS.get(q, ()):
        return 0.7
    root = word_root(q)
    if len(root) >= 4 and root == word_root(f):
        return 0.85  # 'founding' ~ 'founded', 'enrolled' ~ 'enrolment', 'opened' ~ 'opening'
    if len(root) >= 4 and word_root(f) in RELATED_ROOTS.get(root, ()):
        return 0.7  # 'established' ~ 'founded'
    return 0.0


# Plurals the normalizer reads by the regular rule, and the singular they are of: 'movies' ->
# 'movy' is a movie, 'heroes' -> 'heroe' a hero, 'women' (kept) a woman. (Not -ves: 'lives',
# 'leaves', 'drives' are verbs or nouns of their own as often as plurals of -f.)
MISREAD_PLURALS = (("y", "ie"), ("oe", "o"), ("men", "man"))


def same_noun(a: str, b: str) -> bool:
    """Two normal forms of one noun, one of them the normalizer's reading of a plural
    ('movy' / 'movie', 'heroe' / 'hero', 'women' / 'woman')."""
    for x, y in ((a, b), (b, a)):
        for ending, singular in MISREAD_PLURALS:
            stem = x[:-len(ending)]
            if x.endswith(ending) and len(stem) >= 2 and y == stem + singular and len(y) >= 4:
                return True
    return False


VOWELS = frozenset("aeiou")


def skeleton(f: str, q: str) -> bool:
    """A field word abbreviates a question word by its consonants: the word's first letters,
    then consonants of the rest in order up to its last one ('qty' quantity, 'amt' amount,
    'dept' department, 'crs' course, 'mgr' manager; 'hrs' hours, a plural kept)."""
    if len(f) < 3 or len(q) < len(f) + 2 or f[0] != q[0]:
        return False
    plural = f[:-1] if f.endswith("s") and not q.endswith("s") else ""
    return any(_consonant_tail(core, q) for core in (f, plural) if len(core) >= 2)


def _consonant_tail(short: str, word: str) -> bool:
    """`short` is a beginning of `word`, then some of the consonants after it, the last one included."""
    k = next((i for i, (a, b) in enumerate(zip(short, word)) if a != b), len(short))
    tail, consonants = short[k:], [c for c in word[k:] if c not in VOWELS]
    if not tail or VOWELS & set(tail) or not consonants or tail[-1] != consonants[-1]:
        return False
    rest = iter(consonants)
    return all(c in rest for c in tail)


# Derivational endings a word and a field name may differ by ('founding' / 'founded', 'director' / 'directed',
# 'populated' / 'population').
ENDINGS = ("ations", "ation", "ated", "ating", "ments", "ment", "ings", "ing", "ees", "ee", "ers", "er", "ors", "or", "ions", "ion",
           "ous", "ed", "s")


@functools.lru_cache(maxsize=1 << 14)
def word_root(word: str) -> str:
    """A word without its derivational ending, a doubled final consonant undone
    ('enrollment' -> 'enrol', 'openning' -> 'open', 'founded' -> 'found')."""
    for ending in ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 4:
            word = word[:-len(ending)]
            break
    if len(word) >= 5 and word[-1] == word[-2] and word[-1] not in "aeiousy":
        word = word[:-1]
    return word


def _close(a: str, b: str) -> bool:
    import difflib

    return difflib.SequenceMatcher(None, a, b).ratio() >= 0.8


def mention_fields(words: list[str], schema: dict[str, list[Field]]) -> list[Mention]:
    """Every (field, span) where consecutive question words name a field's leaf words.

    The score is the share of the field's words matched, with a bonus when the
    enclosing names (collection, parent objects) also occur in the question,
    and a little more when they occur next to it ('names of cities').
    """
    present = set(words)
    mentions = []
    coordinated, shared = _coordinated_modifiers(words), []
    for collection, fields in schema.items():
        coll_words = set(split_name(collection))
        vocabulary = {w for f in fields for w in f.words}
        heads = {f.words[-1] for f in fields if f.kind == "scalar" and f.words}
        eponym = entity_name(collection, fields)
        if eponym is not None:  # 'the names of the companies': `Company` holds them
            mentions.extend(Mention(eponym, i, i + 1, 1.25, 1.0) for i in _names_of(words, collection))
        name = next((f for f in fields if f.kind == "scalar" and not f.arrays and "name" in f.words), eponym)
        if name is not None:  # 'the companies and their headquarters': each company, by its name
            mentions.extend(Mention(name, i, i + 1, 1.0, 1.0, entity=True)
                            for i in _listed_with_attributes(words, collection))
        for f in fields:
            if not f.words:
                continue
            context = set(f.context) | coll_words
            bonus = 0.25 if context & present else 0.0
            for start in range(len(words)):
                best = _span_match(words, start, f.words)
                if best is not None:
                    end, matched = best
                    share = matched / len(f.words)
                    if share >= 0.5 or _only_implicit_words_unmatched(f, words[start:end], coll_words,
                                                                      set(f.context) & present):
                        if f.years and words[end:end + 1] == ["year"]:
                            end += 1  # 'founded year' names a field of years
                        near = 0.1 if context & set(words[max(0, start - 3):end + 3]) else 0.0
                        echo = _said_nearby(f.words, words, start, end, vocabulary, heads) if share < 1.0 else 0.0
                        mentions.append(Mention(f, start, end, share + bonus + near, share, echo))
                inverted = _inverted_match(words, start, f.words)
                if inverted is not None:
                    mentions.append(Mention(f, start, inverted, 1.0 + bonus, 1.0))
            for at, elided, trails in coordinated:
                best = _span_match(elided, 0, f.words)
                if best is not None and best[0] >= 2 and best[1] / len(f.words) >= 0.8:
                    part = best[1] / len(f.words)
                    shared.append((trails, Mention(f, at, at + 1, part + bonus, part)))
    # only where the second conjunct names a field in full with that head ('last names' is `LName`),
    # or, the head said first ('names, both first and last'), where both modifiers do
    full = {m.start for m in mentions if m.end - m.start >= 2 and m.share >= 0.8}
    both = {(m.field.collection, m.start) for trails, m in shared if trails}
    mentions += [m for trails, m in shared if not trails and m.start + 2 in full
                 or trails and {(m.field.collection, m.start - 2), (m.field.collection, m.start + 2)} & both]
    return mentions + _anaphoric(words, mentions)


# Words that point back to something already named ('where the name includes ...').
DEFINITE = frozenset({"the", "their", "its", "his", "her", "whose"})
# Possessive determiners: what they qualify belongs to something named before.
POSSESSIVES = frozenset({"their", "its", "his", "her"})


def _anaphoric(words: list[str], mentions: list[Mention]) -> list[Mention]:
    """'the first names of students where the name includes "a"': a definite
    head word said again after a field named in full with that head refers
    back to that field (unless a possessor follows: 'the names of their departments')."""
    found = []
    for m in mentions:
        if m.end - m.start < 2 or m.share < 0.8:
            continue
        head = words[m.end - 1]
        found += [Mention(m.field, i, i + 1, m.score, m.share) for i in range(m.end + 1, len(words))
                  if words[i] == head and words[i - 1] in DEFINITE and words[i + 1:i + 2] != ["of"]]
    return found


def entity_name(collection: str, fields: list[Field]) -> Field | None:
    """The field holding a document's name when none is called a name or title:
    the top-level string field named like the entity itself (`Company` in
    company, `Grape` in grapes) or by a synonym of it (`School` in university)."""
    top = [f for f in fields if f.kind == "scalar" and not f.arrays and not f.maps and f.type == "string" and f.words]
    if not top or any({"name", "title"} & set(f.words) for f in top):
        return None
    head = split_name(collection)[-1:]
    named = [f for f in top if len(f.words) == 1 and head and word_match(head[0], f.words[0]) >= 0.7]
    return min(named, key=lambda f: (word_match(head[0], f.words[0]) < 0.85, f.mql)) if named else None


def _modifies(words: list[str], j: int, stop: int, covered, vocabulary: set[str], heads: set[str]) -> bool:
    """The schema words from `j` on (before `stop`), up to a word that ends a
    field's name (a head: 'codes', 'IDs'), are modifiers the field covers:
    'document type codes, names' lends 'document type' to Document_Type_Name,
    not to a Document_Name; 'statement IDs' lends 'statement'."""
    k = j
    while k < stop and words[k] in vocabulary and words[k] not in heads:
        k += 1
    return all(covered(w) for w in words[j:k])


def _names_of(words: list[str], collection: str) -> list[int]:
    """Positions of 'name' words that name the collection's entity: 'company
    names', 'the names of all companies', 'the names and ranks of the companies'."""
    head = split_name(collection)[-1:]
    if not head:
        return []
    names = lambda w: word_match(w, head[0]) >= 0.7
    found = []
    for i, w in enumerate(words):
        if w != "name":
            continue
        if i and names(words[i - 1]):
            found.append(i)
            continue
        of = next((j for j in range(i + 1, min(i + 6, len(words))) if words[j] == "of"), None)
        if of is not None and any(names(x) for x in words[of + 1:of + 6]):
            found.append(i)
    return found


def _said_nearby(fwords: tuple[str, ...], words: list[str], start: int, end: int, vocabulary: set[str],
                 heads: set[str]) -> float:
    """How strongly the field words a partial mention leaves out are said close
    by (0 when not): before it, as a modifier of another attribute of the same
    list or the entity it belongs to ('the statement IDs along with their
    details' names Statement_Details, 'courses with the name X' a course_name),
    or after it in the possessor the list belongs to, whose words naming fields
    (`vocabulary`) the field's words cover ('the codes, names and descriptions
    of document types' names Document_Type_Name, not a Document_Name). The more
    words it supplies and the nearer, the stronger."""
    span = words[start:end]
    missing = [fw for fw in fwords if fw not in WEAK_FIELD_WORDS and not any(word_match(w, fw) >= 0.7 for w in span)]
    # not the first of two coordinated modifiers ('login and last names': the names are last names)
    coordinated = start >= 3 and words[start - 2] in CONJUNCTIONS and words[start - 1] not in TEXT_STOPWORDS
    before = range(max(0, start - 8), start - 3 if coordinated else start)
    # ('their details': the possessor was said before, not in a phrase after it)
    after = range(end, end if start and words[start - 1] in POSSESSIVES else min(len(words), end + 8))
    names = lambda w, fw: word_match(w, fw) >= 0.8
    covered = lambda w: any(names(w, fw) for fw in fwords) or w not in vocabulary

    def distance(fw: str) -> int | None:
        near = [start - j for j in before
                if names(words[j], fw) and _modifies(words, j, start, covered, vocabulary, heads)]
        for j in after:
            if names(words[j], fw):
                run = words[j:next((k for k in range(j, len(words)) if words[k] in TEXT_STOPWORDS), len(words))]
                if all(covered(w) for w in run):
                    near.append(j - end + 1)
                break
        return min(near) if near else None

    far = [distance(fw) for fw in missing]
    if not missing or None in far:
        return 0.0
    return 0.5 * len(missing) / len(fwords) + 0.1 - 0.01 * max(far)


# 'the shops along with their locations': what joins an entity to its attributes
ATTRIBUTE_LINKS = (("and", "their"), ("and", "its"), ("with", "their"), ("with", "its"), ("along", "with", "their"),
                   ("along", "with", "its"), ("together", "with", "their"), ("as", "well", "as", "their"),
                   ("and", "the"), ("along", "with", "the"), ("together", "with", "the"))


def _listed_with_attributes(words: list[str], collection: str) -> list[int]:
    """Positions of words naming the collection's entity that are listed with
    their attributes ('the companies and their main industries'), not counted
    ('the number of companies and their ...') nor possessing another attribute
    ('the nicknames of schools and their locations'; 'a list of schools' lists them)."""
    head = split_name(collection)[-1:]
    found = []
    for i, w in enumerate(words):
        if not head or word_match(w, head[0]) < 0.8 or words[i - 1:i] == ["many"]:
            continue
        of = next((j for j in (i - 1, i - 2) if j >= 1 and words[j] == "of"), None)
        if of is not None and words[of - 1] not in ("list", "set", "all", "each", "every"):
            continue
        if any(tuple(words[i + 1:i + 1 + len(link)]) == link for link in ATTRIBUTE_LINKS):
            found.append(i)
    return found


# Words that may join the attributes of one list ('the names along with the prices', 'ids and their details').
LIST_LINKS = frozenset({"and", "along", "with", "together", "as", "well", "the", "their", "its", "respective",
                        "corresponding", "associated", "also", "plus", "including", "both"})
# Of those, the ones that do coordinate (a bare 'with' introduces a condition: 'names with prices over 10').
LIST_MARKERS = frozenset({"and", "along", "together", "well", "their", "its", "plus", "including"})


def list_words(gap: list[str]) -> bool:
    """The words between two items of a list: a few list words (the comma or marker aside)."""
    return len(gap) <= 4 and all(w in LIST_LINKS for w in gap)


def listed_run(seeds: list[Mention], candidates: list[Mention], coordinated) -> list[Mention]:
    """The candidates listed with the seeds, directly or through one another (`coordinated(a, b)`:
    `a` comes right before `b` in one list), in question order; one per span, the first given."""
    run, found = list(seeds), []
    grew = True
    while grew:
        grew = False
        for m in candidates:
            if m in found or any(n.start < m.end and m.start < n.end for n in run):
                continue
            if any(coordinated(a, b) for n in run for a, b in ((m, n), (n, m))):
                found.append(m)
                run.append(m)
                grew = True
    return sorted(found, key=lambda m: m.start)


# Words joining two modifiers of one head noun ('first and last names').
CONJUNCTIONS = frozenset({"and", "or"})


def _coordinated_modifiers(words: list[str]) -> list[tuple[int, list[str], bool]]:
    """'first and last names': the first modifier shares the head of the second
    conjunct, so it is read with it ('first names'): (position, the modifier
    followed by the words after the second modifier); 'names, both first and
    last': each modifier is read with the head before them (position, [modifier,
    head], True)."""
    before = [(i, [words[i]] + words[i + 3:i + 6], False) for i in range(len(words) - 3)
              if words[i + 1] in CONJUNCTIONS and words[i] not in TEXT_STOPWORDS and words[i + 2] not in TEXT_STOPWORDS]
    # the head said first: 'names (both first and last)', 'names, first and last'
    after = []
    for i in range(len(words) - 3):
        j = i + 2 if words[i + 1] in ("both", "either") else i + 1
        if j + 2 < len(words) and words[j + 1] in CONJUNCTIONS and words[i] not in TEXT_STOPWORDS \
                and words[j] not in TEXT_STOPWORDS and words[j + 2] not in TEXT_STOPWORDS:
            after += [(j, [words[j], words[i]], True), (j + 2, [words[j + 2], words[i]], True)]
    return before + after


# Field-name words that add nothing a question would say ('address_line_1' is an address).
WEAK_FIELD_WORDS = frozenset({"line", "code", "no", "num", "0", "1", "2", "3"})


# Prepositions a field's name may end on ('Directed_by', 'Member_of'): a question naming the verb or
# noun ('the director', 'members') leaves them out.
PREPOSITIONS = frozenset({"by", "of", "in", "for", "to", "at", "on", "with", "from"})


# Verbs that introduce a name as a value ('not named "Jo"'), not the field holding it.
NAMING_VERBS = frozenset({"named", "called", "titled", "labeled", "labelled"})


def _only_implicit_words_unmatched(f: Field, span: list[str], collection: set[str],
                                   said_context: set[str] = frozenset()) -> bool:
    """The words a question leaves out of a field's name are weak ones, its
    collection's own, their initial or abbreviation ('category' names product_category_code
    in products, 'phone' DPhone in departments, 'hire date' EMP_HIREDATE in employees), the
    name of the array holding it when the question says that too (`said_context`: 'the
    types of forms' names the forms' form_type_code), or
    what its stored values already are ('opened' names Open_Year when the field
    holds calendar years, 'hired' names hire_date of a date field), or the preposition
    it ends on ('director' names Directed_by)."""
    implied = WEAK_FIELD_WORDS | collection | said_context | {w[0] for w in collection} | (
        {"year"} if f.years else set()) | (
        {"date"} if f.type == "date" else set()) | unit_words(f.words, collection) | (
        set(f.words[-1:]) & PREPOSITIONS)
    named = {fw for fw in f.words if fw != "id" and any(word_match(w, fw) >= 0.7 and w not in NAMING_VERBS
                                                        for w in span)}
    return bool(named) and all(fw in named or fw in implied or any(word_match(c, fw) >= 0.8 for c in collection)
                               for fw in f.words)


def unit_words(words: tuple[str, ...], collection: set[str]) -> set[str]:
    """`Rating_in_percent`, `Height_in_meters`, `Cost_per_unit`: what follows 'in' or 'per'
    after a field's first word states its unit, which a question naming the measure leaves out
    ('the highest rating'); the preposition goes with it. Not when it names the collection
    (`lost_in_battle` in battles relates the document, it is no unit)."""
    at = next((i for i, w in enumerate(words) if i >= 1 and w in ("in", "per")), None)
    return set(words[at:]) if at is not None and not set(words[at + 1:]) & collection else set()


def _inverted_match(words: list[str], start: int, fwords: tuple[str, ...]) -> int | None:
    """'name of the course' names `course_name`, 'completion date' names
    `date_of_completion`: returns the span end, or None."""
    if len(fwords) == 3 and fwords[1] == "of" and start + 1 < len(words):
        if word_match(words[start], fwords[2]) >= 0.8 and word_match(words[start + 1], fwords[0]) >= 0.8:
            return start + 2
        return None
    if len(fwords) != 2 or start + 2 >= len(words) or words[start + 1] != "of":
        return None
    j = start + 3 if words[start + 2] in ("the", "a", "an", "each", "every", "all") else start + 2
    if j < len(words) and word_match(words[j], fwords[0]) >= 0.8 and word_match(words[start], fwords[1]) >= 0.8:
        return j + 1
    return None


def _abbreviates(fw: str, words: list[str], i: int) -> bool:
    """'fname' abbreviates 'first name', 'dname' 'department name', 'flno'
    'flight number' (the head's first letters, then the tail or its short form)."""
    if i + 1 >= len(words) or len(fw) < 4 or fw[0] != words[i][0]:
        return False
    head, tail = words[i], words[i + 1]
    if len(head) < 2:
        return False
    for short in (tail, *SYNONYMS.get(tail, ())):
        prefix = fw[:len(fw) - len(short)]
        # one letter before a word ('f'+'name'), two before a two-letter form ('fl'+'no')
        if fw.endswith(short) and head.startswith(prefix) and (
                len(prefix) == 1 and len(short) >= 3 or len(prefix) == 2 and len(short) >= 2):
            return True
    return False


def _joined(fw: str, words: list[str], i: int) -> tuple[int, float] | None:
    """(words, score) when one field word is several question words from `i` run together:
    a closed compound ('hire date' is `HIREDATE`) or their initials ('date of birth' is
    `DOB`, its first and last words content words)."""
    for n in (2, 3):
        if i + n <= len(words) and "".join(words[i:i + n]) == fw:
            return n, 1.0
    n = len(fw)
    said = words[i:i + n]
    if n <= 4 and len(said) == n and all(w[:1] == c and w.isalpha() for w, c in zip(said, fw)) \
            and said[0] not in TEXT_STOPWORDS and said[-1] not in TEXT_STOPWORDS:
        return n, 0.8
    return None


def _initial(fw: str, fwords: tuple[str, ...], k: int, words: list[str], i: int) -> bool:
    """A one-letter field word is the initial of the question word at `i` when
    the field's next word follows it ('last name' names `LName`)."""
    return (fw.isalpha() and k + 1 < len(fwords) and i + 1 < len(words) and len(words[i]) >= 3
            and words[i][0] == fw and word_match(words[i + 1], fwords[k + 1]) >= 0.7)


def _span_match(words: list[str], start: int, fwords: tuple[str, ...]):
    """Match field words against question words from `start` (in order, allowing
    the field's leading context words to be absent): returns (end, matched)."""
    matched, i, total, k = 0.0, start, 0, 0
    n, nw = len(fwords), len(words)
    while k < n:
        fw = fwords[k]
        k += 1
        if i < nw:
            w = words[i]
            m = word_match(w, fw)
            # one word for this field word and the next ('hometown': home_city); a prefix match is 0.8
            if (m == 0.0 or m == 0.8) and k < n and (
                    w in COMPOUND_WORDS or len(w) >= len(fw) + 3 and w.startswith(fw)) and _compound(w, fw, fwords[k]):
                matched += 2.0
                i += 1
                total += 2
                k += 1
                continue
            if m:
                matched += m
                i += 1
                total += 1
                continue
            if len(fw) == 1 and _initial(fw, fwords, k - 1, words, i):
                matched += 1.0
                i += 1
                total += 1
                continue
            if fw[:1] == w[:1] and _abbreviates(fw, words, i):  # (cheap test first: hot loop)
                matched += 1.0
                i += 2
                total += 1
                continue
            joined = _joined(fw, words, i) if fw[:1] == w[:1] and len(fw) >= 3 else None
            if joined is not None:
                matched += joined[1]
                i += joined[0]
                total += 1
                continue
        if total == 0:
            continue  # a leading field word may be implicit ('pilot name' named by 'name')
        break
    if total == 0:
        return None
    return i, matched


def _compound(word: str, first: str, second: str) -> bool:
    """One question word names two field words: a closed compound of them
    ('hometown' is home_town, and home_city as a town is a city) or a word for
    the phrase ('username' is a login name)."""
    phrase = COMPOUND_WORDS.get(word)
    if phrase is not None and word_match(phrase[0], first) >= 0.8 and word_match(phrase[1], second) >= 0.8:
        return True
    return (len(first) >= 3 and word.startswith(first) and len(word) - len(first) >= 3
            and word_match(word[len(first):], second) >= 0.7)


# Words a negation reaches over to the entity it denies ('do not have any reviews').
DENIAL_REACH = 5


NEGATIONS = frozenset({"no", "not", "without", "never"})


def denial_of(q: Question, i: int) -> int | None:
    """The position of the negation the word at `i` closely follows ('no books', 'do not
    have reviews'), or None."""
    return next((k for k in range(i - 1, max(-1, i - DENIAL_REACH - 1), -1)
                 if q.raw[k] in NEGATIONS), None)


def denied(q: Question, i: int) -> bool:
    """The word at `i` follows a negation closely ('no books', 'do not have reviews')."""
    return denial_of(q, i) is not None


def name_span(q: Question, collection: str, fields: list[Field] = ()) -> set[int]:
    """Word positions where the question spells a multi-word collection name out
    ('lab histories' for lab_histories): the entity itself, never a field --
    unless a field of the collection has that very name and the question says
    it in the singular ('the allergy type of cat' in Allergy_Type is its
    `AllergyType`; 'all allergy types' are the documents)."""
    words = split_name(collection)
    if len(words) < 2:
        return set()
    eponymous = any(not f.arrays and list(f.words) == words for f in fields)
    for i in range(len(q.stems) - len(words) + 1):
        if all(word_match(q.stems[i + j], w) >= 0.8 for j, w in enumerate(words)):
            last = i + len(words) - 1
            if eponymous and q.raw[last] == q.stems[last]:
                continue
            return set(range(i, i + len(words)))
    return set()


def meaningful_mentions(q: Question, mentions: list[Mention]) -> list[Mention]:
    """Drop spans that cannot name a field: only stopwords ('all' of `All_Games`),
    or the 'number' of a count phrase ('the number of flights') read as part of
    a longer name (`PHONE_NUMBER`)."""
    kept = []
    for m in mentions:
        words = q.raw[m.start:m.end]
        if all(w in TEXT_STOPWORDS for w in words):
            continue
        if q.stems[m.start:m.end] == ["number"] and q.raw[m.end:m.end + 1] == ["of"] and m.share < 1.0:
            continue
        if counts_plural(q, m):
            continue
        kept.append(m)
    return kept


def counts_plural(q: Question, m: Mention) -> bool:
    """'the number of apartment bookings' is a count, not the apartment's `apt_number` that
    'the number of the apartment' names: a mention opened by 'number of' or 'count of' whose
    possessor is a plural, or is followed by one (the noun it modifies). A stored quantity
    (`room_count`, `Num_Employees`) is what 'the number of rooms' names: it stays."""
    if q.stems[m.start] not in ("number", "count") or q.raw[m.start + 1:m.start + 2] != ["of"] \
            or quantity_noun(m.field):
        return False
    return any(q.raw[i] != q.stems[i] for i in range(m.start + 2, min(m.end + 1, len(q.raw))))


def counts_entity(q: Question, m: Mention, entities: set[int]) -> bool:
    """'the count of all the debates' beside a stored `Num_of_Audience`: a mention made of
    'number of' alone, the collection's own name after it, counts the documents; it names
    no stored quantity (which is named by what it counts: 'the number of audience'); nor does
    one that counts distinct values of something else ('the number of different cities' beside
    a stored `no_of_customers`)."""
    stems = q.stems[m.start:m.end]
    if m.share >= 1.0 or "number" not in stems or "of" not in q.raw[m.start:m.end + 1] or not all(
            w in QUANTITY_WORDS or w in TEXT_STOPWORDS for w in stems):
        return False
    after = [i for i in range(m.end, len(q.raw)) if q.raw[i] not in TEXT_STOPWORDS | DISTINCT_WORDS][:3]
    counted = set(m.field.words) - QUANTITY_WORDS - {"of"}  # 'the number of bank customers': `no_of_customers`
    distinct = bool(after) and any(q.raw[i] in DISTINCT_WORDS for i in range(m.end, after[0]))
    return bool(after) and (after[0] in entities or distinct) and not any(q.stems[i] in counted for i in after)


def select_mentions(mentions: list[Mention], collection: str, entity_positions: set[int],
                    plural: set[int] = frozenset(), blocked: set[int] = frozenset(),
                    words: list[str] = (), fields: list[Field] = ()) -> list[Mention]:
    """Non-overlapping field mentions of one collection, best first.

    A word that names the collection or an array entity is taken as that entity,
    unless a field's name matches there in full and the word is not a plural
    ('the device name' is a field; 'for devices' is the collection). A word coordinated
    with a mention names the sibling field its words make of that mention's (`elided`).
    """
    pool = [m for m in mentions if m.field.collection == collection and m.field.kind not in ("object", "dynamic_map")]
    pool.sort(key=lambda m: (-(m.end - m.start >= 2 and m.share >= 0.6), -min(m.score + m.echo, 1.35),
                             -(m.end - m.start), -_parent_beside(m, words),
                             len(m.field.arrays), -_parents_said(m, words),
                             -m.field.present, m.field.mql))
    taken: list[Mention] = []
    used: set[int] = set()
    entity_words: list[Mention] = []  # a word naming the entity and, in full, a field of it
    named = {m.start for m in pool if m.entity}  # entity words listed with attributes: the entity's name
    starts = {m.start for m in pool if m.field.kind != "array"}
    arrays = [set(range(m.start, m.end)) for m in pool if m.field.kind == "array" and m.share == 1.0
              and m.end - m.start >= 2]
    for m in pool:
        span = set(range(m.start, m.end))
        if span & used or span & blocked:
            continue
        if m.field.kind == "array":
            continue
        if span & entity_positions and not m.entity and (m.share < 1.0 or span & entity_positions & plural) \
                and not compounded_entity_word(m, words, entity_positions, plural, arrays):
            if m.share >= 0.85 and m.end - m.start == 1:
                entity_words.append(m)
            if m.start in named or not _entity_and_its_attribute(m, words):
                continue  # (a word the entity's own name is shown for names that)
        if span & entity_positions and not m.entity and m.end in starts and m.end - m.start == 1:
            continue  # 'school enrollment': the entity's word modifies the field named next (the head)
        taken.append(m)
        used |= span
    # 'the grapes and appelations of each wine' in `appellations`: an entity word listed with the
    # attributes shown is its field named so (not when they are its own: 'the countries and their capitals')
    listed = listed_run(taken, [m for m in entity_words if m.start not in used],
                        lambda a, b: _listed_together(words[a.end:b.start], owned=a not in entity_words))
    taken += listed
    used |= {m.start for m in listed}
    taken += elided(taken, words, fields, used | blocked | entity_positions)
    taken = [_in_the_array_read(m, taken, pool, words) for m in taken]
    taken.sort(key=lambda m: m.start)
    return taken


def _in_the_array_read(m: Mention, taken: list[Mention], pool: list[Mention], words: list[str]) -> Mention:
    """A field whose leaf name another array holds too, ranked level with it, is the one in the
    array the reading's other fields are in ('the positions of the players from the team': the
    `Team` of the `match_season` entries that hold the positions, not that of the `player`
    entries), when no other field is in its own."""
    if not m.field.arrays:
        return m
    rank = lambda n: (min(n.score + n.echo, 1.35), _parent_beside(n, words))
    others = {n.field.arrays[-1] for n in taken if n is not m and n.field.arrays}
    if m.field.arrays[-1] in others:
        return m
    level = [n for n in pool if n.field is not m.field and (n.start, n.end) == (m.start, m.end)
             and n.field.words == m.field.words and n.field.kind == m.field.kind
             and len(n.field.arrays) == len(m.field.arrays) and rank(n) == rank(m) and n.field.arrays[-1] in others]
    return replace(m, field=level[0].field) if len(level) == 1 else m


# What may stand between a field's word and the 'of' phrase naming its owner ('the balance of the savings').
_OWNER_DETERMINERS = frozenset({"the", "a", "an", "each", "every", "all", "its", "their", "his", "her"})


def _parent_beside(m: Mention, words: list[str]) -> bool:
    """The array or object holding the field is named right beside the mention: as the
    modifier before it ('the savings balance' is `SAVINGS.balance`, not `CHECKING.balance`)
    or as the owner of an 'of' phrase after it ('the status of the items'). Breaks a tie
    between fields of one leaf name under different parents, whose scores the question's
    other words (each parent said somewhere) make equal. A parent's word that also names the
    collection tells nothing ('the student IDs of students' are the students' own ids, not
    those of their `Student_Course_Enrolment`)."""
    own = split_name(m.field.collection)
    parent = [c for c in m.field.context if not any(word_match(c, w) >= 0.8 for w in own)]
    if not parent or not words:
        return False
    names = lambda at: 0 <= at < len(words) and any(word_match(words[at], c) >= 0.8 for c in parent)
    before = m.start - 1
    while before > 0 and any(word_match(words[before], w) >= 0.8 for w in own):
        before -= 1  # 'the checking account balance' of an account
    if names(before):
        return True
    at = m.end + 1
    if words[m.end:at] != ["of"]:
        return False
    while at < len(words) and words[at] in _OWNER_DETERMINERS:
        at += 1
    return names(at)


def _parents_said(m: Mention, words: list[str]) -> int:
    """How many words of the names enclosing the field (not the collection's) the question
    says: of two `Status_Code`s of bookings, 'the workshop groups that have bookings with
    status code X' names the one under `Drama_Workshop_Groups.Bookings`, not `Clients.Bookings`."""
    own = split_name(m.field.collection)
    parent = {c for c in m.field.context if not any(word_match(c, w) >= 0.8 for w in own)}
    return sum(any(word_match(w, c) >= 0.8 for w in words) for c in parent)


def _entity_and_its_attribute(m: Mention, words: list[str]) -> bool:
    """'the allergies and their types' in `Allergy_Type` (Allergy, AllergyType): a word naming the
    entity and a field of it in full, listed with the attributes it owns (not itself owned: 'the
    names of all countries and their capitals'), is that field; one after the possessive, whose
    other words are said before it, is the field of the entity named so."""
    if m.end - m.start != 1:
        return False
    if m.share == 1.0:
        of = next((j for j in (m.start - 1, m.start - 2) if j >= 1 and words[j] == "of"), None)
        return any(tuple(words[m.end:m.end + len(link)]) == link for link in ATTRIBUTE_LINKS) \
            and (of is None or words[of - 1] in ("list", "set", "all", "each", "every"))
    before = m.start - 1
    while before >= 0 and words[before] in ("corresponding", "respective", "associated"):
        before -= 1
    return before >= 0 and words[before] in ("their", "its") and m.echo > 0


def _listed_together(gap: list[str], owned: bool) -> bool:
    """Two attributes of one list, said one after the other ('grapes and appelations', 'grapes along
    with their appellations'); a possessive between them only when the second is `owned` by the first's
    entity (an entity word before 'and their' owns what follows: 'the countries and their capitals')."""
    return gap[:1] in (["and"], ["or"], ["along"], ["together"], ["plus"]) and list_words(gap) \
        and (owned or not POSSESSIVES & set(gap))


def elided(taken: list[Mention], words: list[str], fields: list[Field], used: set[int]) -> list[Mention]:
    """'the dates of enrollment and completion', 'the booking start and end dates', 'address
    line 1 and 2', 'the phone and email of the customer': a word coordinated with a word of a
    mention, and named by no mention itself, replaces that word in the field's name; the
    sibling field (same parent) so named is shown too. Exactly one sibling must have that
    name, or, when none does, exactly one that name with one word more
    (Customer_Phone -> Customer_Email_Address)."""
    found: list[Mention] = []
    for m in taken:
        if len(m.field.words) < 2:
            continue
        for x in range(m.start, m.end):
            for y in (x + 2, x - 2):
                between = min(x, y) + 1
                if not 0 <= y < len(words) or words[between] not in CONJUNCTIONS or y in used \
                        or words[y] in TEXT_STOPWORDS or any(n.start <= y < n.end for n in found):
                    continue
                sibling = _sibling_named(m.field, words[x], words[y], fields)
                if sibling is not None:
                    found.append(Mention(sibling, y, y + 1, m.score, m.share))
    return found


def _sibling_named(f: Field, said: str, instead: str, fields: list[Field]) -> Field | None:
    """The field beside `f` whose name is f's with the word `said` names replaced by one
    `instead` names (see `elided`)."""
    at = [k for k, fw in enumerate(f.words) if word_match(said, fw) >= 0.8]
    if len(at) != 1:
        return None
    k = at[0]
    parent = f.path.rsplit(".", 1)[0] if "." in f.path else ""
    siblings = [g for g in fields if g is not f and g.kind == "scalar" and g.arrays == f.arrays
                and (g.path.rsplit(".", 1)[0] if "." in g.path else "") == parent
                and len(g.words) in (len(f.words), len(f.words) + 1)
                and g.words[:k] == f.words[:k] and len(g.words) > k and word_match(instead, g.words[k]) >= 0.8]
    for extra in (0, 1):
        named = [g for g in siblings if len(g.words) == len(f.words) + extra
                 and g.words[k + 1:len(f.words)] == f.words[k + 1:]]
        if named:
            return named[0] if len(named) == 1 else None
    return None


def compounded_entity_word(m: Mention, words: list[str], entity_positions: set[int], plural: set[int],
                           arrays: list[set[int]]) -> bool:
    """A word naming the collection or an array entity is part of a compound that names a
    field of it with other words ('department number' is the employee's DEPARTMENT_ID, 'email
    addresses' a Store_Email_Address in `Addresses`, 'log id' a problem_log_id): the span
    matches most of the field's words and some content word of it names no entity; an entity
    word before the head is singular, as modifiers are ('the station's id', 'the airports ids'
    are the entity's own). Not a possessive 'X of Y' the field's name has no 'of' for ('the
    number of employees', 'the IDs of architects': the entity itself, counted or identified),
    nor inside an array's full name ('drama workshop groups' is the array, not its Workshop_Group_ID)."""
    span = set(range(m.start, m.end))
    said = words[m.start:m.end]
    if m.end - m.start < 2 or m.share < 0.6 or len(said) < m.end - m.start or any(span <= a for a in arrays):
        return False
    if "of" in said and "of" not in m.field.words or any(i in plural for i in span & entity_positions if i < m.end - 1):
        return False
    return any(i not in entity_positions and words[i] not in TEXT_STOPWORDS for i in span)


ORDER_SUFFIX = re.compile(r"\b(?:" + "|".join(sorted(SUPERLATIVES)) + r")(?:\s+\w+)?\s+(first|last)\b")


def order_words(q: Question) -> set[int]:
    """'most common first', 'largest first': the position of 'first'/'last', an
    order and never a field ('first_login')."""
    return {q.word_at(m.start(1)) for m in ORDER_SUFFIX.finditer(q.text.lower())}


# 'order by the type', 'sorted by age', 'in ascending order of': a verb or noun of ordering, no value.
ORDERING = re.compile(r"\b(?:order|sort|rank|arrange)(?:ed|d|ing)?(?=\s+(?:by|of)\b)"
                      r"|(?<=\bin\s)(?:\w+\s+){0,2}?order\b")


def ordering_words(q: Question) -> set[int]:
    """The positions of the words that say how results are ordered ('order' of 'order by')."""
    return {q.word_at(m.end() - len(m.group().split()[-1])) for m in ORDERING.finditer(q.text.lower())}


def is_year(term: str) -> bool:
    return bool(re.fullmatch(r"(?:1[89]|20)\d\d", term))


def is_quoted(text: str, start: int, end: int) -> bool:
    before, after = text[max(0, start - 1):start], text[end:end + 1]
    return before in ("'", '"', "“", "‘") and after in ("'", '"', "”", "’")


def to_number(text: str):
    if text in WORD_NUMBERS:
        return WORD_NUMBERS[text]
    value = float(text.replace(",", ""))
    return int(value) if value.is_integer() and "." not in text else value


def maybe_number(word: str):
    try:
        return to_number(word)
    except ValueError:
        return None


def plain_word(q: Question, i: int) -> bool:
    """A lowercase, unquoted word: not a literal such as 'Tony' in 'not "Tony Award"'."""
    start, end = q.spans[i]
    return q.text[start:end].isalpha() and q.text[start:end].islower() and q.text[start - 1:start] not in "\"'“‘"


def names_documents(q: Question, at: int, collection: str) -> bool:
    """The word at `at` names the collection's own documents ('cards' in `Customers_Cards`,
    'game' in `Video_Games`)."""
    head = split_name(collection)[-1:]
    return at < len(q.stems) and any(word_match(q.stems[at], w) >= 0.85 for w in head)
