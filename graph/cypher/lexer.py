"""A linear-time lexer for user Cypher: one pass over the characters, no regular expressions.

Comments and whitespace separate tokens and are then dropped, so ``CA/**/LL`` is two words, never
``CALL``. Anything that is not ASCII outside a string or a backtick-quoted name is refused rather
than guessed at (look-alike dashes, zero-width characters).
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from graph.cypher.errors import CypherRefused

MAX_QUERY_CHARS = 4000  # documented in README; longer queries are refused before any work

Kind = Literal["word", "qword", "string", "int", "float", "param", "punct", "end"]

_PUNCT2 = ("<>", "<=", ">=", "..")
_PUNCT1 = set("()[]{},.:|*+-/%^=<>;")
_DIGITS = frozenset("0123456789")
_IDENT_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_IDENT = _IDENT_START | _DIGITS
_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}


class Token(NamedTuple):
    kind: Kind
    text: str  # decoded value for strings/qwords, the word itself otherwise
    pos: int

    def is_word(self, *words: str) -> bool:
        return self.kind == "word" and self.text.upper() in words


def _is_ident_start(c: str) -> bool:
    return c.isascii() and (c.isalpha() or c == "_")


def _is_ident(c: str) -> bool:
    return c.isascii() and (c.isalnum() or c == "_")


def tokenize(src: str) -> list[Token]:
    """Tokens of ``src`` ending with an ``end`` token; raises CypherRefused on anything unknown."""
    if len(src) > MAX_QUERY_CHARS:
        raise CypherRefused(f"the query is {len(src)} characters long; the limit is {MAX_QUERY_CHARS}")
    out: list[Token] = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c in _IDENT_START:  # most characters start a word: test that first
            j = i + 1
            while j < n and src[j] in _IDENT:
                j += 1
            out.append(Token("word", src[i:j], i))
            i = j
        elif c.isspace():
            i += 1
        elif c == "/" and src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j + 1
        elif c == "/" and src.startswith("/*", i):
            j = src.find("*/", i + 2)
            if j < 0:
                raise CypherRefused(f"unterminated /* comment at character {i}")
            i = j + 2
        elif c == "`":
            j = src.find("`", i + 1)
            if j < 0:
                raise CypherRefused(f"unterminated `name` at character {i}")
            if j == i + 1 or src.startswith("`", j + 1):
                raise CypherRefused(f"empty or doubled backticks at character {i} are not supported")
            out.append(Token("qword", src[i + 1:j], i))
            i = j + 1
        elif c in "'\"":
            i = _string(src, i, out)
        elif c in _DIGITS:
            i = _number(src, i, out)
        elif c == "$":
            j = i + 1
            while j < n and src[j] in _IDENT:
                j += 1
            if j == i + 1 or src[i + 1] in _DIGITS:
                raise CypherRefused(f"a parameter at character {i} must be named like $name")
            out.append(Token("param", src[i + 1:j], i))
            i = j
        elif src[i:i + 2] in _PUNCT2:
            out.append(Token("punct", src[i:i + 2], i))
            i += 2
        elif src.startswith("!=", i):
            raise CypherRefused(f"'!=' at character {i}: write '<>' for 'not equal'")
        elif src.startswith("=~", i):
            raise CypherRefused(f"regular expressions ('=~' at character {i}) are not supported")
        elif c in _PUNCT1:
            out.append(Token("punct", c, i))
            i += 1
        else:
            raise CypherRefused(f"unexpected character {c!r} (U+{ord(c):04X}) at character {i}")
    out.append(Token("end", "", n))
    return out


def _string(src: str, i: int, out: list[Token]) -> int:
    quote, j, n = src[i], i + 1, len(src)
    buf: list[str] = []
    while j < n:
        c = src[j]
        if c == quote:
            out.append(Token("string", "".join(buf), i))
            return j + 1
        if c == "\\":
            e = src[j + 1:j + 2]
            if e in _ESCAPES:
                buf.append(_ESCAPES[e])
                j += 2
                continue
            if e in ("u", "U"):
                hexs = src[j + 2:j + 6]
                if len(hexs) == 4 and all(h in "0123456789abcdefABCDEF" for h in hexs):
                    buf.append(chr(int(hexs, 16)))
                    j += 6
                    continue
            raise CypherRefused(f"unknown escape {src[j:j + 2]!r} in the string at character {i}")
        buf.append(c)
        j += 1
    raise CypherRefused(f"unterminated string at character {i}")


def _number(src: str, i: int, out: list[Token]) -> int:
    n, j = len(src), i
    while j < n and src[j].isascii() and src[j].isdigit():
        j += 1
    kind: Kind = "int"
    # "1..3" is a range, not the float "1." followed by ".3"
    if j + 1 < n and src[j] == "." and src[j + 1].isascii() and src[j + 1].isdigit():
        kind, j = "float", j + 1
        while j < n and src[j].isascii() and src[j].isdigit():
            j += 1
    if j < n and src[j] in "eE":
        k = j + 1 + (src[j + 1:j + 2] in ("+", "-"))
        if k < n and src[k].isascii() and src[k].isdigit():
            kind, j = "float", k
            while j < n and src[j].isascii() and src[j].isdigit():
                j += 1
    if j < n and _is_ident(src[j]):
        raise CypherRefused(f"malformed number {src[i:j + 1]!r} at character {i}")
    out.append(Token(kind, src[i:j], i))
    return j
