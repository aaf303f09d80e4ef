"""The regular expressions of queries (`$regex`, `$regexMatch`, `$regexFind`, `$regexFindAll`):
compiled with the `regex` package and searched under the running query's deadline.

MongoDB matches with PCRE, a backtracking engine: a pattern like `^(a|aa)+$` over a long
`aaa…b` takes exponential time there as in Python, and one such record would hold a run
for minutes whatever `--timeout` says. A search inside a query is stopped at the query's
deadline and ends in its typed `timeout`:

- in the main thread by a wall-clock alarm (SIGALRM, armed once per query at its
  deadline; the handler raises only inside `search`), since both `re` and `regex`
  let signal handlers run in the middle of a search;
- elsewhere (a query run from another thread, or SIGALRM taken by someone else) by
  `regex`'s own `timeout`, which counts the process's CPU time, not wall time: exact
  on an idle machine, later by the machine's load factor on a busy one.

`regex` also reads more of PCRE's syntax than `re` (`\\p{…}` properties, `\\z`), and
does not backtrack exponentially on some patterns that `re` does (`^(a+)+$`).

    >>> search(compile("^a+$", 0), "aaa").group(0)
    'aaa'
"""

from __future__ import annotations

import re
import signal
import threading

from nlq.mql.expressions import current_clock

# `regex` is imported by the first compile (it costs ~40 ms, and most runs match no pattern).
_regex = None
IGNORECASE, MULTILINE, DOTALL, VERBOSE = re.IGNORECASE, re.MULTILINE, re.DOTALL, re.VERBOSE  # regex's values too


class PatternError(ValueError):
    """An invalid pattern (the message is the regex package's)."""


# PCRE's POSIX classes are ASCII ([[:alpha:]] is [a-zA-Z]); `regex` would read them as Unicode classes.
_POSIX = {"alpha": "a-zA-Z", "digit": "0-9", "alnum": "a-zA-Z0-9", "upper": "A-Z", "lower": "a-z",
          "space": r"\s", "punct": r"!-/:-@\[-`{-~", "xdigit": "0-9A-Fa-f", "word": r"\w",
          "blank": r" \t", "cntrl": r"\x00-\x1f\x7f", "print": r"\x20-\x7e", "graph": r"\x21-\x7e"}
_POSIX_RE = re.compile(r"\[:(\w+):\]")


def translate_pcre(pattern: str) -> str:
    """Rewrite the PCRE spellings `regex` reads otherwise: the ASCII POSIX classes `[[:alpha:]]`.
    (`\\z`, `(?<name>…)`, possessive quantifiers and atomic groups are read as PCRE reads them.)"""
    if "[:" in pattern:
        pattern = _POSIX_RE.sub(lambda m: _POSIX.get(m.group(1), m.group(0)), pattern)
    return pattern


def compile(pattern: str, flags: int):  # noqa: A001 - the name every regex module uses
    """A compiled MongoDB (PCRE) pattern (PatternError for an invalid one)."""
    global _regex
    if _regex is None:
        import regex as _regex
    try:
        return _regex.compile(translate_pcre(pattern), flags)
    except _regex.error as exc:
        raise PatternError(str(exc)) from None


def is_pattern(value) -> bool:
    """A pattern `compile` returned (or one of Python's `re`)."""
    return isinstance(value, re.Pattern) or _regex is not None and isinstance(value, _regex.Pattern)


_MAIN = threading.main_thread().ident
_ALARM = hasattr(signal, "setitimer")
_get_ident = threading.get_ident

# The alarm's state (module globals: `search` reads them on every call).
_armed_for = None   # the clock the SIGALRM timer was last armed for
_fired = False      # the timer has gone off since


def _on_alarm(signum, frame) -> None:
    """Stop a search of the query the alarm was armed for: signal handlers run in the main
    thread between two steps of a search, and `frame` is then `search`'s own."""
    global _fired
    _fired = True
    if frame is not None and frame.f_code is _SEARCH_CODE and current_clock() is _armed_for:
        raise _armed_for.expired()


def _alarm_usable() -> bool:
    """SIGALRM is free for nlq: the main thread, and no handler or timer of someone else's."""
    if not _ALARM or _get_ident() != _MAIN:
        return False
    handler = signal.getsignal(signal.SIGALRM)
    if handler is not _on_alarm:
        if handler not in (signal.SIG_DFL, signal.SIG_IGN) or signal.getitimer(signal.ITIMER_REAL)[0]:
            return False
        signal.signal(signal.SIGALRM, _on_alarm)  # a no-op outside searches, so it may stay
    return True


def search(rx, s: str, pos: int = 0):
    """`rx.search(s, pos)`, stopped by the running query's deadline (QueryTimeout); no limit outside a query."""
    clock = current_clock()
    if clock is None or clock is _armed_for and not _fired and _get_ident() == _MAIN:
        return rx.search(s, pos)  # within a query, the alarm stops it (`_on_alarm`)
    return _search_arming(rx, s, pos, clock)


_SEARCH_CODE = search.__code__


def _search_arming(rx, s: str, pos: int, clock):
    """The first search of a query (arm the alarm at its deadline), or one the alarm cannot stop."""
    global _armed_for, _fired
    left = clock.remaining()
    if left <= 0:
        raise clock.expired()
    if _alarm_usable():
        _armed_for, _fired = clock, False
        signal.setitimer(signal.ITIMER_REAL, left)
        return search(rx, s, pos)
    try:
        return rx.search(s, pos, timeout=left)
    except TimeoutError:
        raise clock.expired() from None


__all__ = ["compile", "search", "translate_pcre", "is_pattern", "PatternError", "IGNORECASE", "MULTILINE", "DOTALL", "VERBOSE"]
