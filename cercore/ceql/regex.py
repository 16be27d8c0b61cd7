"""LIKE's regular expressions: RE2 syntax, searched in linear time on every path.

A LIKE pattern comes from a query and the string it searches from an event, so neither is
trusted: Python's backtracking ``re`` takes exponential time on ``(a+)+$`` against a run of
``a``s and a ``b``. RE2 (the ``google-re2`` binding) guarantees time linear in the string, at
the price of backreferences, lookaround, atomic groups and possessive quantifiers, which
analysis refuses (:func:`regex_problem`). Every evaluator -- the vector form (once per
distinct string of a batch), the scalar form (``push``, trend conditions, network pairs) --
searches through :func:`like_search`, so the dialect is RE2's everywhere (DESIGN.md "Filters"):
``\\d``, ``\\w``, ``\\s`` and ``\\b`` are ASCII, ``$`` matches only at the very end of the string,
the end of the string is ``\\z`` (not ``\\Z``), flags are ``i``, ``m``, ``s`` and ``U``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

import re2

# A refused pattern becomes a query error: RE2 must not also log it to stderr.
_OPTIONS = re2.Options()
_OPTIONS.log_errors = False

# Strings repeat (names, codes): the scalar form remembers the answer for this many short ones
# per pattern (about 1 µs of a push), as the vector form computes it once per distinct string
# of a batch. Bounded: at most _PATTERNS * _MEMO_SIZE strings of _MEMO_LENGTH characters.
_PATTERNS = 128
_MEMO_SIZE = 1024
_MEMO_LENGTH = 64

# RE2 reads a repetition it cannot take as literal text ({,3}; a count of 10 digits); Python's
# re reads {,3} as {0,3}. Both are refused rather than silently matching the braces.
_BRACES = re.compile(r"\{(\d*)(?:,(\d*))?\}")
_MAX_REPEAT = 1000  # RE2's own bound: {1001} is "invalid repetition size"

# What RE2's error says -> the feature a Python (PCRE) user wrote that RE2 does not have.
_UNSUPPORTED = (
    (re.compile(r"invalid escape sequence: \\[1-9]"), "backreferences (\\1)"),
    (re.compile(r"invalid perl operator: \(\?P$"),
     "backreferences and calls ((?P=name), (?P>name))"),
    (re.compile(r"invalid perl operator: \(\?#"), "comments ((?#...))"),
    (re.compile(r"invalid perl operator: \(\?<?[=!]"), "lookaround ((?=, (?!, (?<=, (?<!)"),
    (re.compile(r"invalid perl operator: \(\?>"), "atomic groups ((?>)"),
    (re.compile(r"bad repetition operator: [*+?}]\+"), "possessive quantifiers (a++)"),
    (re.compile(r"invalid escape sequence: \\Z"), "\\Z (write \\z for the end of the string)"),
    (re.compile(r"invalid perl operator: \(\?[-a-zA-Z]*$"), "flags other than i, m, s and U"),
)


def _encode(text: str) -> bytes:
    """UTF-8, with lone surrogates (bytes the input could not decode, kept by surrogateescape)
    encoded as themselves: RE2 reads each as one character, as Python's re would."""
    return text.encode("utf-8", "surrogatepass")


def regex_problem(pattern: str) -> str | None:
    """Why ``pattern`` (a LIKE pattern) is not a regular expression RE2 runs, or None."""
    brace = _brace_problem(pattern)
    if brace is not None:
        return _refusal(pattern, brace)
    try:
        re2.compile(_encode(pattern), _OPTIONS)
    except re2.error as e:
        detail = e.args[0].decode("utf-8", "replace") if e.args and isinstance(
            e.args[0], bytes) else str(e)
        unsupported = next((what for rx, what in _UNSUPPORTED if rx.search(detail)), None)
        if unsupported is not None:
            return _refusal(pattern, unsupported)
        return f"invalid regular expression {pattern!r}: {detail}"
    return None


def _refusal(pattern: str, what: str) -> str:
    return (f"invalid regular expression {pattern!r}: {what} not supported; LIKE needs a "
            f"linear-time regular expression (RE2 syntax: no backreferences, lookaround, atomic "
            f"groups or possessive quantifiers, repetition counts at most {_MAX_REPEAT})")


def _brace_problem(pattern: str) -> str | None:
    """A ``{...}`` repetition that RE2 would read as literal text, or None. Escapes (``\\{``,
    ``\\Q...\\E``, ``\\x{...}``) and character classes hold braces that repeat nothing and are
    skipped."""
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            i = _escape_end(pattern, i)
        elif c == "[":
            i = _class_end(pattern, i)
        elif c == "{":
            m = _BRACES.match(pattern, i)
            if m is not None:
                low, high = m.group(1), m.group(2)
                if not low and high:
                    return f"{m.group(0)} (write {{0,{high}}})"
                if any(_above_max(count) for count in (low, high)):
                    return f"the repetition count {m.group(0)}"
            i += 1
        else:
            i += 1
    return None


def _above_max(count: str | None) -> bool:
    """Is the repetition count (digits, or None / empty: none) above RE2's bound? Compared by
    length first: int() refuses thousands of digits."""
    digits = (count or "").lstrip("0")
    return len(digits) > len(str(_MAX_REPEAT)) or int(digits or "0") > _MAX_REPEAT


def _escape_end(pattern: str, start: int) -> int:
    """The index after the escape at ``start``: ``\\Q...\\E``, ``\\x{...}``, ``\\p{...}`` or a
    backslash and one character."""
    kind = pattern[start + 1:start + 2]
    if kind == "Q":
        end = pattern.find("\\E", start + 2)
        return len(pattern) if end < 0 else end + 2
    if kind in ("x", "p", "P") and pattern.startswith("{", start + 2):
        end = pattern.find("}", start + 3)
        return len(pattern) if end < 0 else end + 1
    return start + 2


def _class_end(pattern: str, start: int) -> int:
    """The index after the character class opening at ``start`` (``[^]a]``, ``[[:alpha:]]``)."""
    i = start + 1
    if pattern.startswith("^", i):
        i += 1
    if pattern.startswith("]", i):  # a leading ] is a member
        i += 1
    while i < len(pattern):
        if pattern[i] == "\\":
            i = _escape_end(pattern, i)
        elif pattern.startswith("[:", i) and (end := pattern.find(":]", i + 2)) >= 0:
            i = end + 2
        elif pattern[i] == "]":
            return i + 1
        else:
            i += 1
    return i


@functools.lru_cache(maxsize=_PATTERNS)
def like_search(pattern: str) -> Callable[[str], bool]:
    """``text -> bool``: does ``pattern`` (checked by :func:`regex_problem`) occur anywhere in
    ``text``? An unanchored RE2 search, linear in ``len(text)``."""
    search = re2.compile(_encode(pattern), _OPTIONS).search
    memo: dict[str, bool] = {}

    def like(text: str) -> bool:
        found = memo.get(text)
        if found is None:
            found = search(_encode(text)) is not None
            if len(memo) < _MEMO_SIZE and len(text) <= _MEMO_LENGTH:
                memo[text] = found
        return found
    return like
