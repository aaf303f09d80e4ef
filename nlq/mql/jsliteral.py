"""JavaScript literals as mongosh query text writes them: a tokenizer and a
recursive-descent parser of the static subset of JavaScript (never ``eval``).

    >>> Parser("{a: NumberLong(5), b: /x/i}").value()
    {'a': Int64(5), 'b': Regex('x', 2)}

Accepted: unquoted
and quoted keys, single/double quoted strings with JavaScript escapes,
trailing commas, comments, regex literals ``/.../flags``, ``ObjectId``,
``ISODate``, ``new Date(string | ms)``, ``NumberInt``, ``NumberLong``,
``NumberDecimal``/``Decimal128``, ``Timestamp(t, i)``, ``MinKey()``,
``MaxKey()``, ``BinData``, ``UUID``, ``RegExp``, ``true/false/null/undefined``,
``Infinity``, ``NaN``, signed, hex/octal/binary numbers and exponents.

Value choices (documented because mongosh differs in places):

- Numbers: an integer literal becomes a Python ``int`` (BSON int/long), a
  literal with a ``.`` or an exponent a ``float``. mongosh itself makes every
  number a double, but MQL semantics rarely tell int from double, and reading
  integers as ints keeps ``$limit: 5`` and group counts readable and exact.
  Integers beyond the 64-bit range become floats.
- Dates are timezone-aware UTC datetimes (millisecond precision). A date
  string without an offset is read as UTC, as ``ISODate`` does (JavaScript's
  ``new Date("2020-01-01T10:00")`` would use the shell's local zone).
  ``Date(...)`` without ``new`` is rejected: JavaScript ignores its argument
  and returns the current time as a string.
- ``undefined`` becomes null (what the Node.js driver sends by default).
  Regex flags ``g``, ``y`` and ``d`` (JavaScript-only) are dropped; the
  others are kept in alphabetical order as BSON requires.
- Anything that is not a static literal (variables, functions, arrow
  functions, template strings, arithmetic, several statements, ``ObjectId()``
  or ``new Date()`` without argument) is a :class:`ParseError` saying so.
"""

from __future__ import annotations

import base64
import datetime as _dt
import math
import uuid
from dataclasses import dataclass

from nlq.errors import InputError, ParseError, QueryTooDeep
from nlq.mql.limits import MAX_NESTING
from nlq.mql.values import (Binary, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp, millis_to_date,
                            parse_iso_date)

MAX_DEPTH = MAX_NESTING  # levels of one literal: MongoDB's BSON nesting limit (no query nests deeper)
_INT64 = (-(2**63), 2**63 - 1)
_PUNCT = set("{}[](),:.;")
# After these tokens a `/` starts a regex literal; elsewhere it is division.
_VALUE_STARTERS = {"(", "[", "{", ",", ":", None}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}
_JS_KEYWORDS = {"function", "var", "let", "const", "return", "if", "for", "while", "this", "class",
                "typeof", "void", "delete", "in", "instanceof", "await", "async", "yield"}


@dataclass
class Token:
    kind: str      # 'punct' | 'string' | 'number' | 'ident' | 'regex' | 'op' | 'eof'
    value: object
    pos: int       # offset of the first character
    end: int       # offset after the last character


# ---------------------------------------------------------------------------
# errors with line, column and caret


def _position(text: str, pos: int) -> tuple[int, int]:
    """1-based line and column of offset `pos`."""
    return text.count("\n", 0, pos) + 1, pos - (text.rfind("\n", 0, pos) + 1) + 1


def syntax_error(text: str, pos: int, message: str, error: type = ParseError) -> ParseError:
    pos = max(0, min(pos, len(text)))
    line, column = _position(text, pos)
    start = pos - column + 1
    end = text.find("\n", pos)
    source_line = text[start:] if end < 0 else text[start:end]
    # Long lines (one-line pipelines) are cut to a window around the column.
    window = max(0, column - 1 - 60)
    shown = source_line[window:window + 100]
    prefix = "..." if window else ""
    suffix = "..." if window + 100 < len(source_line) else ""
    excerpt = f"  {prefix}{shown}{suffix}\n  {' ' * (column - 1 - window + len(prefix))}^"
    return error(message, line=line, column=column, excerpt=excerpt)


# ---------------------------------------------------------------------------
# tokenizer


def scan_regex_body(text: str, i: int) -> int:
    """Index of the `/` closing a regex literal whose body starts at `i`, or -1.

    A `/` inside a character class or after a backslash does not close it; a
    line break means the literal is unterminated.
    """
    in_class = False
    n = len(text)
    while i < n:
        c = text[i]
        if c in "\n\r\u2028\u2029":
            return -1
        if c == "\\":
            if text[i + 1:i + 2] in ("\n", "\r", "\u2028", "\u2029"):
                return -1
            i += 2
            continue
        if c == "[":
            in_class = True
        elif c == "]":
            in_class = False
        elif c == "/" and not in_class:
            return i
        i += 1
    return -1


def _is_digit(c: str) -> bool:
    return len(c) == 1 and "0" <= c <= "9"


def _is_ident_start(c: str) -> bool:
    return c.isalpha() or c in "_$"


def _is_ident_char(c: str) -> bool:
    return c.isalnum() or c in "_$"


class Tokenizer:
    """Splits mongosh text into tokens; comments and whitespace are skipped."""

    def __init__(self, text: str):
        self.text = text
        self.pos = 0
        self.previous: str | None = None  # punct of the last token (regex context)

    def error(self, pos: int, message: str) -> ParseError:
        return syntax_error(self.text, pos, message)

    def _skip_space(self) -> None:
        text, n = self.text, len(self.text)
        while self.pos < n:
            c = text[self.pos]
            if c.isspace() or c == "\ufeff":
                self.pos += 1
            elif text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                self.pos = n if end < 0 else end + 1
            elif text.startswith("/*", self.pos):
                end = text.find("*/", self.pos + 2)
                if end < 0:
                    raise self.error(self.pos, "unterminated /* comment")
                self.pos = end + 2
            else:
                return

    def next(self) -> Token:
        self._skip_space()
        text, start = self.text, self.pos
        if start >= len(text):
            return Token("eof", None, start, start)
        c = text[start]
        if c in "\"'":
            token = self._string(c)
        elif _is_digit(c) or (c == "." and _is_digit(text[start + 1:start + 2])):
            token = self._number()
        elif c == "/" and self.previous in _VALUE_STARTERS:
            token = self._regex()
        elif c == "=" and text.startswith("=>", start):
            self.pos += 2
            token = Token("op", "=>", start, self.pos)
        elif c in _PUNCT:
            if text.startswith("...", start):
                self.pos += 3
                token = Token("op", "...", start, self.pos)
            else:
                self.pos += 1
                token = Token("punct", c, start, self.pos)
        elif _is_ident_start(c):
            end = start + 1
            while end < len(text) and _is_ident_char(text[end]):
                end += 1
            self.pos = end
            token = Token("ident", text[start:end], start, end)
        elif c == "`":
            raise self.error(start, "template strings are JavaScript, not a static query literal")
        elif c in "+-":
            self.pos += 1
            token = Token("op", c, start, self.pos)
        else:
            raise self.error(start, f"unexpected character {c!r}: JavaScript operators and "
                                    "expressions are not part of a static query literal")
        self.previous = token.value if token.kind == "punct" else token.kind
        return token

    def _string(self, quote: str) -> Token:
        text, start = self.text, self.pos
        i, n = start + 1, len(text)
        out: list[str] = []
        while True:
            if i >= n:
                raise self.error(start, "unterminated string")
            c = text[i]
            if c == quote:
                i += 1
                break
            if c in "\n\r":
                raise self.error(i, "unterminated string (line break inside a string literal)")
            if c != "\\":
                j = i
                while j < n and text[j] not in (quote, "\\", "\n", "\r"):
                    j += 1
                out.append(text[i:j])
                i = j
                continue
            if i + 1 >= n:
                raise self.error(start, "unterminated string")
            e = text[i + 1]
            i += 2
            if e in _ESCAPES and not (e == "0" and _is_digit(text[i:i + 1])):
                out.append(_ESCAPES[e])
            elif e == "x":
                out.append(chr(self._hex(text[i:i + 2], 2, i - 2)))
                i += 2
            elif e == "u":
                if text[i:i + 1] == "{":
                    close = text.find("}", i)
                    if close < 0:
                        raise self.error(i - 2, "invalid \\u{...} escape")
                    code = self._hex(text[i + 1:close], 0, i - 2)
                    if code > 0x10FFFF:
                        raise self.error(i - 2, "invalid \\u{...} escape (beyond U+10FFFF)")
                    out.append(chr(code))
                    i = close + 1
                else:
                    out.append(chr(self._hex(text[i:i + 4], 4, i - 2)))
                    i += 4
            elif e == "\r":
                if text[i:i + 1] == "\n":
                    i += 1
            elif e in "\n\u2028\u2029":
                pass  # line continuation
            elif _is_digit(e):
                raise self.error(i - 2, "octal escapes are not allowed in strings")
            else:
                out.append(e)
        self.pos = i
        # Join surrogate pairs written as two \u escapes (JavaScript strings are UTF-16).
        value = "".join(out)
        if any("\ud800" <= ch <= "\udfff" for ch in value):
            value = value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
        return Token("string", value, start, i)

    def _hex(self, digits: str, length: int, pos: int) -> int:
        if (length and len(digits) != length) or not digits or any(ch not in "0123456789abcdefABCDEF" for ch in digits):
            raise self.error(pos, "invalid escape sequence")
        return int(digits, 16)

    def _number(self) -> Token:
        text, start = self.text, self.pos
        n = len(text)
        if text[start] == "0" and text[start + 1:start + 2] in ("x", "X", "o", "O", "b", "B"):
            base = {"x": 16, "o": 8, "b": 2}[text[start + 1].lower()]
            end = start + 2
            while end < n and _is_ident_char(text[end]):
                end += 1
            digits = text[start + 2:end]
            if not digits or any(d not in "0123456789abcdefABCDEF"[:base + (base > 10) * 6] for d in digits):
                raise self.error(start, f"invalid number {text[start:end]!r}")
            self.pos = end
            return Token("number", int(digits, base), start, end)
        end = start
        while end < n and _is_digit(text[end]):
            end += 1
        is_float = False
        if end < n and text[end] == ".":
            is_float = True
            end += 1
            while end < n and _is_digit(text[end]):
                end += 1
        if end < n and text[end] in "eE":
            exp = end + 1
            if exp < n and text[exp] in "+-":
                exp += 1
            if exp < n and _is_digit(text[exp]):
                is_float = True
                end = exp
                while end < n and _is_digit(text[end]):
                    end += 1
        if end < n and _is_ident_char(text[end]):
            raise self.error(start, f"invalid number {text[start:end + 1]!r}")
        literal = text[start:end]
        if not is_float and len(literal) > 1 and literal[0] == "0":
            raise self.error(start, f"legacy octal literal {literal!r} is not allowed "
                                    f"(write 0o{literal[1:]} or {literal.lstrip('0') or '0'})")
        self.pos = end
        if is_float:
            return Token("number", float(literal), start, end)
        return Token("number", int(literal), start, end)  # range-checked by the parser (after a sign)

    def _regex(self) -> Token:
        text, start = self.text, self.pos
        close = scan_regex_body(text, start + 1)
        if close < 0:
            raise self.error(start, "unterminated regular expression literal")
        end = close + 1
        while end < len(text) and _is_ident_char(text[end]):
            end += 1
        flags = text[close + 1:end]
        self.pos = end
        return Token("regex", _regex(text[start + 1:close], flags, lambda m: self.error(close + 1, m)), start, end)


def _regex(pattern: str, flags: str, error) -> Regex:
    bad = [f for f in flags if f not in "imsxugyd"]
    if bad or len(set(flags)) != len(flags):
        raise error(f"invalid regular expression flags {flags!r}")
    return Regex(pattern, "".join(sorted(set(flags) - set("gyd"))))


# ---------------------------------------------------------------------------
# parser of static literals and of the db.<c>.<method>(...) chain


class Parser:
    def __init__(self, text: str):
        self.text = text
        self.tokens = Tokenizer(text)
        self.token = self.tokens.next()
        self.depth = 0
        self.warnings: list[str] = []

    def error(self, message: str, token: Token | None = None) -> ParseError:
        return syntax_error(self.text, (token or self.token).pos, message)

    def advance(self) -> Token:
        token = self.token
        self.token = self.tokens.next()
        return token

    def at(self, value: str) -> bool:
        return self.token.kind in ("punct", "op") and self.token.value == value

    def expect(self, value: str, context: str = "") -> Token:
        if not self.at(value):
            raise self.error(f"expected {value!r}{context}, found {self._describe(self.token)}")
        return self.advance()

    @staticmethod
    def _describe(token: Token) -> str:
        if token.kind == "eof":
            return "end of input"
        if token.kind == "string":
            return f"string {token.value!r}"
        return repr(str(token.value)) if token.kind != "regex" else "a regular expression"

    # -- values -------------------------------------------------------------

    def value(self):
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise syntax_error(self.text, self.token.pos, f"nested more than {MAX_DEPTH} levels deep (MongoDB's "
                               "BSON nesting limit)", error=QueryTooDeep)
        try:
            return self._value()
        finally:
            self.depth -= 1

    def _value(self):
        token = self.token
        kind = token.kind
        if kind == "punct":
            if token.value == "{":
                return self.object()
            if token.value == "[":
                return self.array()
            if token.value == "(":
                raise self.error("parenthesized expressions and arrow functions are JavaScript, "
                                 "not a static query literal")
            raise self.error(f"expected a value, found {self._describe(token)}")
        if kind in ("string", "regex"):
            self.advance()
            result = token.value
        elif kind == "number":
            self.advance()
            result = _fit(token.value)
        elif kind == "op" and token.value in "+-":
            self.advance()
            operand = self.token
            if operand.kind == "number":
                self.advance()
                result = _fit(-operand.value if token.value == "-" else operand.value)
            elif operand.kind == "ident" and operand.value in ("Infinity", "NaN"):
                self.advance()
                result = -math.inf if (operand.value, token.value) == ("Infinity", "-") else (
                    math.inf if operand.value == "Infinity" else math.nan)
            else:
                raise self.error("unary + and - apply only to number literals in a static query literal", token)
        elif kind == "ident":
            result = self.identifier_value()
        elif kind == "eof":
            raise self.error("unexpected end of input: expected a value")
        else:
            raise self.error(f"expected a value, found {self._describe(token)}")
        return self._no_operator_after(result)

    def _no_operator_after(self, result):
        token = self.token
        if token.kind == "op" and token.value in "+-":
            raise self.error("arithmetic is JavaScript, not a static query literal")
        if token.kind == "ident" or token.kind in ("string", "number"):
            raise self.error(f"expected ',' or a closing bracket, found {self._describe(token)}")
        return result

    def object(self) -> dict:
        self.expect("{")
        result: dict = {}
        while not self.at("}"):
            key_token = self.token
            if key_token.kind == "ident" or key_token.kind == "string":
                key = key_token.value
            elif key_token.kind == "number":
                key = _js_number_key(key_token.value)
            elif self.at("["):
                raise self.error("computed keys ([expr]: ...) are JavaScript, not a static query literal")
            elif self.at("..."):
                raise self.error("spread syntax (...) is JavaScript, not a static query literal")
            elif key_token.kind == "eof":
                raise self.error("unexpected end of input inside an object: missing '}'")
            else:
                raise self.error(f"expected a key or '}}', found {self._describe(key_token)}")
            self.advance()
            if not self.at(":"):
                if key_token.kind == "ident" and (self.at(",") or self.at("}")):
                    raise self.error(f"shorthand property {key!r} refers to a JavaScript variable, "
                                     "not a static query literal", key_token)
                if key_token.kind == "ident" and self.at("("):
                    raise self.error("methods in object literals are JavaScript functions, "
                                     "not a static query literal", key_token)
                self.expect(":", f" after key {key!r}")
            self.advance()
            result[key] = self.value()
            if self.at(","):
                self.advance()
            elif not self.at("}"):
                if self.token.kind == "eof":
                    raise self.error("unexpected end of input inside an object: missing '}'")
                raise self.error(f"expected ',' or '}}' after the value of {key!r}, found {self._describe(self.token)}")
        self.advance()
        return result

    def array(self) -> list:
        self.expect("[")
        result = []
        while not self.at("]"):
            if self.at(","):
                raise self.error("array holes ([a, , b]) are not allowed")
            if self.token.kind == "eof":
                raise self.error("unexpected end of input inside an array: missing ']'")
            result.append(self.value())
            if self.at(","):
                self.advance()
            elif not self.at("]"):
                if self.token.kind == "eof":
                    raise self.error("unexpected end of input inside an array: missing ']'")
                raise self.error(f"expected ',' or ']' in an array, found {self._describe(self.token)}")
        self.advance()
        return result

    def identifier_value(self):
        token = self.advance()
        name = token.value
        constants = {"true": True, "false": False, "null": None, "undefined": None,
                     "Infinity": math.inf, "NaN": math.nan}
        if name in constants:
            return constants[name]
        if name == "new":
            if self.token.kind != "ident":
                raise self.error("expected a constructor name after 'new'")
            ctor = self.advance()
            if ctor.value not in _CONSTRUCTORS:
                raise self.error(f"new {ctor.value}(...) is not a BSON value constructor mongosh knows", ctor)
            return self.constructor(ctor, new=True)
        if name in _CONSTRUCTORS and self.at("("):
            return self.constructor(token, new=False)
        if self.at("=>"):
            raise self.error("arrow functions are JavaScript, not a static query literal", token)
        if name == "function" or name in _JS_KEYWORDS:
            raise self.error(f"'{name}' is JavaScript code, not a static query literal (functions and "
                             "statements cannot be part of a query)", token)
        if self.at("("):
            raise self.error(f"call of {name}(...) is JavaScript, not a static query literal", token)
        raise self.error(f"{name!r} is a JavaScript variable or expression, not a static query literal", token)

    def arguments(self, what: str, unclosed_ok: bool = False) -> list:
        """The comma-separated values of `what(...)`, the parentheses consumed.

        With `unclosed_ok`, input ending (possibly after a `;`) where the `)`
        should be is accepted and noted in `self.warnings`.
        """
        open_token = self.expect("(")
        args = []
        while not self.at(")"):
            if self.token.kind == "eof" or (args and self.at(";")):
                if unclosed_ok and self._end_follows():
                    line, column = _position(self.text, open_token.pos)
                    self.warnings.append(f"missing ')' to close {what}( opened at line {line}, column "
                                         f"{column}: accepted in tolerant mode")
                    return args
                raise syntax_error(self.text, open_token.pos,
                             f"missing ')' to close {what}( (the query ends before it)")
            args.append(self.value())
            if self.at(","):
                self.advance()
            elif not self.at(")") and self.token.kind != "eof" and not self.at(";"):
                raise self.error(f"expected ',' or ')' in the arguments of {what}(), "
                                 f"found {self._describe(self.token)}")
        self.advance()
        return args

    def _end_follows(self) -> bool:
        while self.at(";"):
            self.advance()
        return self.token.kind == "eof"

    def constructor(self, token: Token, new: bool):
        name = token.value
        if not self.at("("):
            raise self.error(f"expected '(' after {name}")
        args = self.arguments(name)
        try:
            return _CONSTRUCTORS[name](args, new)
        except ParseError:
            raise
        except (ValueError, TypeError, OverflowError, InputError, ArithmeticError) as exc:
            raise self.error(f"invalid {name}({', '.join(map(repr, args))}): {exc}", token) from None


def _fit(number):
    """Integers beyond the 64-bit range become doubles (as every number is in mongosh)."""
    if type(number) is int and not _INT64[0] <= number <= _INT64[1]:
        try:
            return float(number)
        except OverflowError:
            return math.copysign(math.inf, number)
    return number


def _js_number_key(value) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return str(value)


def _one(args, name, *types):
    if len(args) != 1 or (types and not isinstance(args[0], types)) or type(args[0]) is bool:
        kinds = f" ({' or '.join(t.__name__ for t in types)})" if types else ""
        raise ValueError(f"{name} takes one argument{kinds}")
    return args[0]


def _object_id(args, new):
    if not args:
        raise ValueError("ObjectId() without an argument creates a new random id, which is not deterministic")
    value = _one(args, "ObjectId", str)
    if len(value) != 24 or any(c not in "0123456789abcdefABCDEF" for c in value):
        raise ValueError("an ObjectId is 24 hexadecimal characters")
    return ObjectId(value)


def _parse_date_string(text: str) -> _dt.datetime:
    s = text.strip()
    if len(s) == 10 and s[4] == "-" and s[7] == "-":
        s += "T00:00:00"
    s = s.replace(" ", "T", 1) if "T" not in s and len(s) > 10 else s
    # +0000 offsets (mongosh's own output) -> +00:00
    if len(s) >= 5 and s[-5] in "+-" and s[-4:].isdigit() and "T" in s:
        s = s[:-2] + ":" + s[-2:]
    value = parse_iso_date(s)
    return value.replace(microsecond=value.microsecond // 1000 * 1000)


def _iso_date(args, new):
    if not args:
        raise ValueError("ISODate() without an argument is the current time, which is not deterministic "
                         "(and $$NOW is forbidden)")
    value = _one(args, "ISODate", str)
    return _parse_date_string(value)


def _date(args, new):
    if not new:
        raise ValueError("Date(...) without 'new' returns the current time as a string in JavaScript; "
                         "write new Date(...) or ISODate(...)")
    if not args:
        raise ValueError("new Date() without an argument is the current time, which is not deterministic")
    value = _one(args, "new Date", str, int, float)
    if isinstance(value, str):
        return _parse_date_string(value)
    if isinstance(value, float) and not value.is_integer():
        value = math.trunc(value)
    return millis_to_date(int(value))


def _number_int(args, new):
    value = _one(args, "NumberInt", str, int, float) if args else 0
    number = float(value) if isinstance(value, str) else value
    if isinstance(number, float):
        if not math.isfinite(number):
            raise ValueError("not a finite number")
        number = math.trunc(number)
    if not -(2**31) <= number < 2**31:
        raise ValueError("out of the 32-bit range")
    return int(number)


def _number_long(args, new):
    value = _one(args, "NumberLong", str, int, float) if args else 0
    if isinstance(value, str):
        value = int(value)
    elif isinstance(value, float):
        if not value.is_integer():
            raise ValueError("not an integer")
        value = int(value)
    if not _INT64[0] <= value <= _INT64[1]:
        raise ValueError("out of the 64-bit range")
    return Int64(value)


def _number_decimal(args, new):
    value = _one(args, "NumberDecimal", str, int, float) if args else "0"
    return Decimal128(value if isinstance(value, str) else repr(value) if isinstance(value, float) else str(value))


def _timestamp(args, new):
    if len(args) == 1 and isinstance(args[0], dict) and set(args[0]) == {"t", "i"}:
        args = [args[0]["t"], args[0]["i"]]
    if len(args) != 2 or not all(type(a) is int for a in args):
        raise ValueError("Timestamp takes two integers (t, i) or {t, i}")
    return Timestamp(args[0], args[1])


def _no_args(cls):
    def make(args, new):
        if args:
            raise ValueError("takes no argument")
        return cls()
    return make


def _bin_data(args, new):
    if len(args) != 2 or type(args[0]) is not int or not isinstance(args[1], str):
        raise ValueError("BinData takes a subtype and a base64 string")
    return Binary(base64.b64decode(args[1], validate=True), args[0])


def _uuid(args, new):
    value = _one(args, "UUID", str)
    return Binary(uuid.UUID(value).bytes, 4)


def _reg_exp(args, new):
    if not args or len(args) > 2 or not all(isinstance(a, str) for a in args):
        if len(args) == 1 and isinstance(args[0], Regex):
            return args[0]
        raise ValueError("RegExp takes a pattern string and optional flags")
    flags = args[1] if len(args) == 2 else ""

    def fail(message):
        raise ValueError(message)
    return _regex(args[0], flags, fail)


_CONSTRUCTORS = {
    "ObjectId": _object_id, "ISODate": _iso_date, "Date": _date,
    "NumberInt": _number_int, "Int32": _number_int,
    "NumberLong": _number_long, "Long": _number_long,
    "NumberDecimal": _number_decimal, "Decimal128": _number_decimal,
    "Timestamp": _timestamp, "MinKey": _no_args(MinKey), "MaxKey": _no_args(MaxKey),
    "BinData": _bin_data, "UUID": _uuid, "RegExp": _reg_exp,
}


__all__ = ["Parser", "Tokenizer", "Token", "scan_regex_body", "MAX_DEPTH"]
