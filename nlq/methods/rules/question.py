"""The question: its words (one tokenizer, `nlq.text.word_spans`) and the spans naming fields.

    Question.of(text)           raw words, stems and character spans
    mention_fields(words, schema)  every span of consecutive words naming a lattice path
    meaningful_mentions / select_mentions  the non-overlapping mentions of one collection
"""

from __future__ import annotations

import re
import functools
from dataclasses import dataclass

from nlq.text import STOPWORDS as TEXT_STOPWORDS
from nlq.text import normalize, word_spans
from nlq.methods.rules.paraphrase import canonical
from nlq.methods.rules.vocabulary import RELATED_ROOTS, SUPERLATIVES, SYNONYMS, WORD_NUMBERS
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
    """'the number of police officers' where `Police_officers` is a stored number:
    the phrase names that field, it counts nothing."""
    if not count.group().endswith("of"):
        return False
    at = q.word_at(count.end())
    return any(m.start == at and m.share >= 0.8 and m.field.numeric and "id" not in m.field.words
               for m in mentions)


@functools.lru_cache(maxsize=1 << 16)  # a pure function of two words, called per (field, word) pair
def word_match(q: str, f: str) -> float:
    """How well a question word names a field word (1 exact, <1 partial, 0 none)."""
    if q == f or q == f + "s" and len(f) <= 3 or q == f + "e" and f.endswith("s"):
        return 1.0  # 'ids' is left plural by the normalizer, 'buses' becomes 'buse'
    if len(f) >= 2 and len(q) >= 4 and q.startswith(f) and len(f) >= 3:
        return 0.8  # 'student' ~ 'stu'
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


# Derivational endings a word and a field name may differ by ('founding' / 'founded').
ENDINGS = ("ations", "ation", "ments", "ment", "ings", "ing", "ees", "ee", "ers", "er", "ions", "ion", "ed", "s")


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
    for collection, fields in schema.items():
        coll_words = set(split_name(collection))
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
                    if share >= 0.5 or _only_implicit_words_unmatched(f.words, words[start:end], coll_words):
                        if f.years and words[end:end + 1] == ["year"]:
                            end += 1  # 'founded year' names a field of years
                        near = 0.1 if context & set(words[max(0, start - 3):end + 3]) else 0.0
                        mentions.append(Mention(f, start, end, share + bonus + near, share))
                inverted = _inverted_match(words, start, f.words)
                if inverted is not None:
                    mentions.append(Mention(f, start, inverted, 1.0 + bonus, 1.0))
    return mentions


# Field-name words that add nothing a question would say ('address_line_1' is an address).
WEAK_FIELD_WORDS = frozenset({"line", "code", "no", "num", "0", "1", "2", "3"})


def _only_implicit_words_unmatched(fwords: tuple[str, ...], span: list[str], collection: set[str]) -> bool:
    """The words a question leaves out of a field's name are weak ones or its
    collection's own ('category' names product_category_code in products)."""
    return any(w in span for w in fwords) and all(
        w in span or w in WEAK_FIELD_WORDS or w in collection for w in fwords)


def _inverted_match(words: list[str], start: int, fwords: tuple[str, ...]) -> int | None:
    """'name of the course' names `course_name`: returns the span end, or None."""
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


def _span_match(words: list[str], start: int, fwords: tuple[str, ...]):
    """Match field words against question words from `start` (in order, allowing
    the field's leading context words to be absent): returns (end, matched)."""
    matched, i, total = 0.0, start, 0
    for fw in fwords:
        if i < len(words):
            m = word_match(words[i], fw)
            if m:
                matched += m
                i += 1
                total += 1
                continue
            if fw[:1] == words[i][:1] and _abbreviates(fw, words, i):  # (cheap test first: hot loop)
                matched += 1.0
                i += 2
                total += 1
                continue
        if total == 0:
            continue  # a leading field word may be implicit ('pilot name' named by 'name')
        break
    if total == 0:
        return None
    return i, matched


def denied(q: Question, i: int) -> bool:
    """The word at `i` follows a negation closely ('no books', 'do not have reviews')."""
    return any(q.raw[k] in ("no", "not", "without", "never") for k in range(max(0, i - 3), i))


def name_span(q: Question, collection: str) -> set[int]:
    """Word positions where the question spells a multi-word collection name out
    ('lab histories' for lab_histories): the entity itself, never a field."""
    words = split_name(collection)
    if len(words) < 2:
        return set()
    for i in range(len(q.stems) - len(words) + 1):
        if all(word_match(q.stems[i + j], w) >= 0.8 for j, w in enumerate(words)):
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
        kept.append(m)
    return kept


def select_mentions(mentions: list[Mention], collection: str, entity_positions: set[int],
                    plural: set[int] = frozenset(), blocked: set[int] = frozenset()) -> list[Mention]:
    """Non-overlapping field mentions of one collection, best first.

    A word that names the collection or an array entity is taken as that entity,
    unless a field's name matches there in full and the word is not a plural
    ('the device name' is a field; 'for devices' is the collection).
    """
    pool = [m for m in mentions if m.field.collection == collection and m.field.kind not in ("object", "dynamic_map")]
    pool.sort(key=lambda m: (-(m.end - m.start >= 2 and m.share >= 0.6), -min(m.score, 1.35), -(m.end - m.start),
                             len(m.field.arrays),
                             -m.field.present, m.field.mql))
    taken: list[Mention] = []
    used: set[int] = set()
    for m in pool:
        span = set(range(m.start, m.end))
        if span & used or span & blocked:
            continue
        if m.field.kind == "array":
            continue
        if span & entity_positions and (m.share < 1.0 or span & entity_positions & plural):
            continue
        taken.append(m)
        used |= span
    taken.sort(key=lambda m: m.start)
    return taken


ORDER_SUFFIX = re.compile(r"\b(?:" + "|".join(sorted(SUPERLATIVES)) + r")(?:\s+\w+)?\s+(first|last)\b")


def order_words(q: Question) -> set[int]:
    """'most common first', 'largest first': the position of 'first'/'last', an
    order and never a field ('first_login')."""
    return {q.word_at(m.start(1)) for m in ORDER_SUFFIX.finditer(q.text.lower())}


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
