"""nlq.text: the one normal form shared by the value index, witnesses and rules."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from nlq.text import content_words, normalize, number_term, singular, strip_accents, tokens


@pytest.mark.parametrize("term, expected", [
    ("Hôpital  St.-Louis", "hopital st louis"),
    ("CARDIOLOGY", "cardiology"),
    ("Cardiologists", "cardiologist"),
    ("O'Brien", "obrien"),
    ("O’Brien", "obrien"),
    ("Type 2", "type 2"),
    ("type-2", "type 2"),
    ("E11.9", "e11 9"),
    ("HbA1c", "hba1c"),
    ("1,000", "1000"),
    ("  ", ""),
    ("Ekström", "ekstrom"),
    ("ﬁnal", "final"),
])
def test_normalize(term, expected):
    assert normalize(term) == expected


@pytest.mark.parametrize("word, expected", [
    ("cities", "city"), ("boxes", "box"), ("matches", "match"), ("wins", "win"),
    ("races", "race"), ("class", "class"), ("status", "status"), ("analysis", "analysis"),
    ("bus", "bus"), ("gas", "gas"), ("data", "data"), ("is", "is"), ("series", "series"),
    ("labs", "lab"), ("2019s", "2019s"),
])
def test_singular(word, expected):
    assert singular(word) == expected


def test_tokens_keep_decimals_and_drop_punctuation():
    assert tokens("HbA1c in 1987, 12.5 mg? 1,000 people; 1,2,3") == \
        ["hba1c", "in", "1987", "12.5", "mg", "1000", "people", "1", "2", "3"]


def test_content_words_drop_stopwords_and_singularize():
    assert content_words("How many patients were born in 1987?") == ["patient", "born", "1987"]


def test_strip_accents():
    assert strip_accents("Wüstenring Grüber São") == "Wustenring Gruber Sao"


@pytest.mark.parametrize("value, expected", [
    (2010.0, "2010"), (12.99, "12.99"), (5, "5"), (-3, "-3"), (0.1, "0.1"),
])
def test_number_term(value, expected):
    assert number_term(value) == expected


def test_plural_and_singular_meet():
    assert normalize("Central Labs") == normalize("central lab")
    assert normalize("Cities") == normalize("city")


@given(st.text())
def test_normalize_is_idempotent(text):
    once = normalize(text)
    assert normalize(once) == once


@given(st.text())
def test_normalize_is_case_and_accent_blind(text):
    assert normalize(text.upper()) == normalize(text.lower()) or not text.isascii()


def test_docstring_examples():
    import doctest

    import nlq.text

    assert doctest.testmod(nlq.text).failed == 0


def test_one_word_boundary_for_witnesses_and_rules():
    from nlq.methods.rules.question import Question
    from nlq.text import word_spans

    text = "Teams with over 1,000 fans that don’t play in O'Brien Park"
    words = [w for w, _, _ in word_spans(text)]
    assert words == ["Teams", "with", "over", "1,000", "fans", "that", "don’t", "play", "in", "O'Brien", "Park"]
    q = Question.of(text)  # rules read the question with its rephrasings rewritten ("don’t" -> "do not")
    assert q.text == "Teams with over 1,000 fans that do not play in O'Brien Park"
    assert [q.text[a:b] for a, b in q.spans] == [w for w, _, _ in word_spans(q.text)]
    assert q.raw[3] == "1000" and q.raw[6:8] == ["do", "not"] and q.stems[10] == "obrien"
    assert q.find("1,000 fans") == 3 and q.find("O’Brien") == 10
