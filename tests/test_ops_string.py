"""String expression operators: exact values from the manual's examples plus
null/missing propagation, byte vs code point offsets and MongoDB's errors."""

from __future__ import annotations

import re

import pytest
from bson.int64 import Int64
from bson.regex import Regex

from nlq.errors import ExecutionError
from nlq.mql.expressions import compile_expression, evaluate
from nlq.mql.values import MISSING
from tests.helpers import assert_raises

DOC = {"s": "cafétéria", "e": "Éclair", "sushi": "寿司", "j": "Java", "n": None, "i": 7, "q": "13Q1",
       "d": "  \n good  bread  \t ", "x": 1.5}


def run(spec, doc=DOC):
    return evaluate(spec, doc)


# https://www.mongodb.com/docs/manual/reference/operator/aggregation/concat/
CONCAT = [
    ({"$concat": ["ABC1", " - ", "product 1"]}, "ABC1 - product 1"),
    ({"$concat": ["a", "$n"]}, None),
    ({"$concat": ["a", "$missing"]}, None),
    ({"$concat": []}, ""),
    ({"$concat": "$j"}, "Java"),
]

# https://www.mongodb.com/docs/manual/reference/operator/aggregation/substrBytes/
# https://www.mongodb.com/docs/manual/reference/operator/aggregation/substrCP/
# https://www.mongodb.com/docs/manual/reference/operator/aggregation/substr/
SUBSTR = [
    ({"$substrBytes": ["$q", 0, 2]}, "13"),
    ({"$substrBytes": ["$q", 2, {"$subtract": [{"$strLenBytes": "$q"}, 2]}]}, "Q1"),
    ({"$substrBytes": ["$s", 0, 3]}, "caf"),
    ({"$substrBytes": ["$s", 0, 5]}, "café"),
    ({"$substrBytes": ["$s", 3, -1]}, "étéria"),
    ({"$substrBytes": ["$s", 50, 2]}, ""),
    ({"$substrBytes": ["$n", 0, 2]}, ""),
    ({"$substrBytes": ["$missing", 0, 2]}, ""),
    ({"$substrBytes": ["$i", 0, 1]}, "7"),
    ({"$substr": ["$q", 1, 2]}, "3Q"),
    ({"$substrCP": ["$s", 0, 5]}, "cafét"),
    ({"$substrCP": ["$sushi", 1, 1]}, "司"),
    ({"$substrCP": ["$q", 2, 10]}, "Q1"),
    ({"$substrCP": ["$q", 2.0, 1]}, "Q"),
]

# https://www.mongodb.com/docs/manual/reference/operator/aggregation/strLenBytes/
# https://www.mongodb.com/docs/manual/reference/operator/aggregation/strLenCP/
STRLEN = [
    ({"$strLenBytes": "$s"}, 11), ({"$strLenBytes": "$e"}, 7), ({"$strLenBytes": "$j"}, 4),
    ({"$strLenBytes": "$sushi"}, 6),
    ({"$strLenCP": "$s"}, 9), ({"$strLenCP": "$e"}, 6), ({"$strLenCP": "$j"}, 4), ({"$strLenCP": "$sushi"}, 2),
]

# https://www.mongodb.com/docs/manual/reference/operator/aggregation/split/
SPLIT = [
    ({"$split": ["Berkeley, CA", ", "]}, ["Berkeley", "CA"]),
    ({"$split": ["a,b,", ","]}, ["a", "b", ""]),
    ({"$split": ["abc", "x"]}, ["abc"]),
    ({"$split": ["$n", ","]}, None),
    ({"$split": ["$missing", ","]}, None),
    ({"$split": ["a", "$n"]}, None),
]

# https://www.mongodb.com/docs/manual/reference/operator/aggregation/toLower/ (and toUpper, strcasecmp)
CASE = [
    ({"$toLower": "ABC1 É"}, "abc1 É"),
    ({"$toUpper": "abc1 é"}, "ABC1 é"),
    ({"$toUpper": "$n"}, ""),
    ({"$toLower": "$missing"}, ""),
    ({"$toUpper": "$i"}, "7"),
    ({"$toUpper": "$x"}, "1.5"),
    ({"$strcasecmp": ["$q", "13q4"]}, -1),
    ({"$strcasecmp": ["13Q1", "13q1"]}, 0),
    ({"$strcasecmp": ["b", "A"]}, 1),
    ({"$strcasecmp": ["$n", ""]}, 0),
]

# https://www.mongodb.com/docs/manual/reference/operator/aggregation/trim/ (ltrim, rtrim)
TRIM = [
    ({"$trim": {"input": "$d"}}, "good  bread"),
    ({"$ltrim": {"input": "$d"}}, "good  bread  \t "),
    ({"$rtrim": {"input": "$d"}}, "  \n good  bread"),
    ({"$trim": {"input": "ggood breadgg", "chars": "g"}}, "ood bread"),
    ({"$trim": {"input": " xyzabcxy", "chars": "xyz "}}, "abc"),
    ({"$rtrim": {"input": "1.500", "chars": "0"}}, "1.5"),
    ({"$trim": {"input": "$n"}}, None),
    ({"$trim": {"input": "$missing"}}, None),
    ({"$trim": {"input": "abc", "chars": "$n"}}, None),
    ({"$trim": {"input": "\u00a0\u3000x\u2028"}}, "x"),
]

# https://www.mongodb.com/docs/manual/reference/operator/aggregation/indexOfBytes/
# https://www.mongodb.com/docs/manual/reference/operator/aggregation/indexOfCP/
INDEX_OF = [
    ({"$indexOfBytes": ["$s", "é"]}, 3),
    ({"$indexOfCP": ["$s", "é"]}, 3),
    ({"$indexOfBytes": ["$s", "é", 4]}, 6),
    ({"$indexOfCP": ["$s", "é", 4]}, 5),
    ({"$indexOfBytes": ["$sushi", "司"]}, 3),
    ({"$indexOfCP": ["$sushi", "司"]}, 1),
    ({"$indexOfCP": ["cafeteria", "e", 5, 2]}, -1),
    ({"$indexOfCP": ["cafeteria", "e", 0, 4]}, 3),
    ({"$indexOfCP": ["cafeteria", "e", 0, 3]}, -1),
    ({"$indexOfCP": ["foo.bar.fi", ".", 20]}, -1),
    ({"$indexOfCP": ["abc", ""]}, 0),
    ({"$indexOfBytes": ["$n", "a"]}, None),
    ({"$indexOfCP": ["$missing", "a"]}, None),
]

# https://www.mongodb.com/docs/manual/reference/operator/aggregation/replaceOne/
# https://www.mongodb.com/docs/manual/reference/operator/aggregation/replaceAll/
REPLACE = [
    ({"$replaceOne": {"input": "blue paint", "find": "blue paint", "replacement": "red paint"}}, "red paint"),
    ({"$replaceAll": {"input": "blue paint with blue paintbrush", "find": "blue paint",
                      "replacement": "red paint"}}, "red paint with red paintbrush"),
    ({"$replaceOne": {"input": "blue paint with blue paintbrush", "find": "blue paint",
                      "replacement": "red paint"}}, "red paint with blue paintbrush"),
    ({"$replaceAll": {"input": "$n", "find": "a", "replacement": "b"}}, None),
    ({"$replaceAll": {"input": "abc", "find": "$missing", "replacement": "b"}}, None),
    ({"$replaceOne": {"input": "abc", "find": "x", "replacement": "y"}}, "abc"),
]


@pytest.mark.parametrize("spec,expected", CONCAT + SUBSTR + STRLEN + SPLIT + CASE + TRIM + INDEX_OF + REPLACE)
def test_string_values(spec, expected):
    result = run(spec)
    assert result == expected and type(result) is type(expected)


# https://www.mongodb.com/docs/manual/reference/operator/aggregation/regexFind/
# https://www.mongodb.com/docs/manual/reference/operator/aggregation/regexFindAll/
# https://www.mongodb.com/docs/manual/reference/operator/aggregation/regexMatch/
REGEX = [
    ({"$regexFind": {"input": "Single LINE description.", "regex": "line"}}, None),
    ({"$regexFind": {"input": "Single LINE description.", "regex": "line", "options": "i"}},
     {"match": "LINE", "idx": 7, "captures": []}),
    ({"$regexFind": {"input": "Single LINE description.", "regex": Regex("line", "i")}},
     {"match": "LINE", "idx": 7, "captures": []}),
    ({"$regexFind": {"input": "cafétéria au lait", "regex": "(au) (l)(x)?"}},
     {"match": "au l", "idx": 10, "captures": ["au", "l", None]}),
    ({"$regexFindAll": {"input": "Multiple\nline descriptions", "regex": "^l", "options": "m"}},
     [{"match": "l", "idx": 9, "captures": []}]),
    ({"$regexFindAll": {"input": "Multiple\nline descriptions", "regex": "^l"}}, []),
    ({"$regexFindAll": {"input": "a.b\nc", "regex": "b.c", "options": "s"}},
     [{"match": "b\nc", "idx": 2, "captures": []}]),
    ({"$regexFindAll": {"input": "abcd", "regex": " b c # comment", "options": "x"}},
     [{"match": "bc", "idx": 1, "captures": []}]),
    ({"$regexFindAll": {"input": "ab", "regex": "x*"}},
     [{"match": "", "idx": 0, "captures": []}, {"match": "", "idx": 1, "captures": []},
      {"match": "", "idx": 2, "captures": []}]),
    ({"$regexFindAll": {"input": "é1 é22", "regex": "(?<digits>[[:digit:]]+)"}},
     [{"match": "1", "idx": 1, "captures": ["1"]}, {"match": "22", "idx": 4, "captures": ["22"]}]),
    ({"$regexFindAll": {"input": "$n", "regex": "a"}}, []),
    ({"$regexFind": {"input": "$missing", "regex": "a"}}, None),
    ({"$regexFind": {"input": "abc", "regex": "$n"}}, None),
    ({"$regexMatch": {"input": "abc", "regex": "^A", "options": "i"}}, True),
    ({"$regexMatch": {"input": "abc", "regex": "^b"}}, False),
    ({"$regexMatch": {"input": "$n", "regex": "a"}}, False),
]


@pytest.mark.parametrize("spec,expected", REGEX)
def test_regex(spec, expected):
    assert run(spec) == expected


def test_regex_from_field_and_dynamic_options():
    docs = [{"t": "Apple", "r": "^a", "o": "i"}, {"t": "Apple", "r": "^a", "o": ""}]
    fn = compile_expression({"$regexMatch": {"input": "$t", "regex": "$r", "options": "$o"}})
    assert [fn({"CURRENT": d, "ROOT": d}) for d in docs] == [True, False]


def test_compiled_python_pattern_is_accepted():
    assert run({"$regexMatch": {"input": "ABC", "regex": re.compile("b", re.I)}}) is True


ERRORS = [
    ({"$concat": ["a", 1]}, "$concat only supports strings, not int"),
    ({"$substrBytes": ["$s", 0, 4]}, "ending index is in the middle of a UTF-8 character"),
    ({"$substrBytes": ["$s", 4, 2]}, "starting index is a UTF-8 continuation byte"),
    ({"$substrBytes": ["$s", -1, 2]}, "starting index must be non-negative"),
    ({"$substrBytes": ["$s", "a", 2]}, "starting index must be a numeric type"),
    ({"$substrBytes": [[1], 0, 2]}, "can't convert from BSON type array to String"),
    ({"$substrCP": ["$s", 0, -1]}, "length must be a nonnegative integer"),
    ({"$substrCP": ["$s", -1, 1]}, "the starting index must be nonnegative integer"),
    ({"$substrCP": ["$s", 0.5, 1]}, "starting index cannot be represented as a 32-bit integral value"),
    ({"$strLenBytes": "$n"}, "$strLenBytes requires a string argument, found: null"),
    ({"$strLenCP": "$missing"}, "$strLenCP requires a string argument, found: missing"),
    ({"$strLenCP": "$i"}, "$strLenCP requires a string argument, found: int"),
    ({"$split": ["$i", ","]}, "first argument, found: int"),
    ({"$split": ["a", 1]}, "second argument, found: int"),
    ({"$split": ["a", ""]}, "$split requires a non-empty separator"),
    ({"$trim": {"input": 1}}, "$trim requires its input to be a string"),
    ({"$trim": {"input": "a", "chars": 1}}, "$trim requires 'chars' to be a string"),
    ({"$trim": {"input": "a", "bad": 1}}, "unknown argument: bad"),
    ({"$indexOfBytes": [1, "a"]}, "requires a string as the first argument, found: int"),
    ({"$indexOfCP": ["a", "$n"]}, "requires a string as the second argument, found: null"),
    ({"$indexOfCP": ["a", "a", -1]}, "requires a nonnegative starting index, found: -1"),
    ({"$indexOfCP": ["a", "a", 1.5]}, "requires an integral starting index"),
    ({"$regexFind": {"input": 1, "regex": "a"}}, "$regexFind needs 'input' to be of type string"),
    ({"$regexFind": {"input": "a", "regex": 1}}, "$regexFind needs 'regex' to be of type string or regex"),
    ({"$regexMatch": {"input": "a", "regex": "a", "options": "q"}}, "invalid flag in regex options: q"),
    ({"$regexMatch": {"input": "a", "regex": Regex("a", "i"), "options": "i"}},
     "found regex option(s) specified in both 'regex' and 'option' fields"),
    ({"$regexMatch": {"input": "a", "regex": "(a"}}, "Invalid Regex in $regexMatch"),
    ({"$replaceAll": {"input": 1, "find": "a", "replacement": "b"}}, "'input' be a string, found: 1"),
    ({"$replaceOne": {"input": "a", "find": "a"}}, "requires 'replacement' to be specified"),
]


@pytest.mark.parametrize("spec,message", ERRORS)
def test_string_errors(spec, message):
    assert_raises(ExecutionError, message, run, spec)


def test_errors_carry_mongodb_codes():
    with pytest.raises(ExecutionError) as info:
        run({"$concat": [1]})
    assert info.value.code == 16702
    with pytest.raises(ExecutionError) as info:
        run({"$substrBytes": ["$s", 0, 4]})
    assert info.value.code == 28657


def test_missing_operand_in_object_output_is_dropped():
    # `$substrCP` of a missing string is "" — never MISSING — so the field exists.
    assert evaluate({"out": {"$substrCP": ["$missing", 0, 1]}}, {}) == {"out": ""}
    assert evaluate({"$concat": ["$missing"]}, {}) is None
    assert MISSING is not None


def test_long_indices_are_accepted():
    assert run({"$substrCP": ["$q", Int64(1), Int64(2)]}) == "3Q"
