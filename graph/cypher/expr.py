"""Token helpers and the expression grammar of user Cypher (the clause grammar is in parser.py).

Precedence, lowest first: OR, XOR, AND, NOT, comparison (one, not chained), IS NULL / IN /
CONTAINS / STARTS WITH / ENDS WITH, + -, * / %, ^, unary - +, property access, atoms. Recursion
depth is bounded by MAX_DEPTH; patterns, comprehensions, subqueries, subscripts and map
projections are refused where they would start.
"""

from __future__ import annotations

from collections.abc import Callable

from graph.cypher import allow
from graph.cypher.ast import (Binary, Case, Expr, Func, IsNull, ListLit, Lit, MapLit, Param, Prop, Quant, Str, Unary,
                              Var, depth)
from graph.cypher.errors import CypherRefused
from graph.cypher.lexer import Token

_COMPARE = ("=", "<>", "<", ">", "<=", ">=")


class ExprParser:
    def __init__(self, toks: list[Token]):
        self.toks, self.i, self.depth = toks, 0, 0
        self.scope: list[str] = []  # user-visible variables, in binding order
        self.params: list[str] = []

    # -- token helpers --
    @property
    def tok(self) -> Token:
        return self.toks[self.i]

    def peek(self, k: int = 1) -> Token:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def refuse(self, what: str, tok: Token | None = None) -> CypherRefused:
        t = tok or self.tok
        near = "the end of the query" if t.kind == "end" else f"{t.text!r} (character {t.pos})"
        return CypherRefused(f"{what} near {near}")

    def at(self, p: str) -> bool:
        return self.tok.kind == "punct" and self.tok.text == p

    def eat(self, p: str) -> bool:
        if self.at(p):
            self.i += 1
            return True
        return False

    def expect(self, p: str) -> None:
        if not self.eat(p):
            raise self.refuse(f"expected '{p}'")

    def word(self, *words: str) -> bool:
        if self.tok.is_word(*words):
            self.i += 1
            return True
        return False

    def expect_word(self, w: str) -> None:
        if not self.word(w):
            raise self.refuse(f"expected {w}")

    def name(self, what: str) -> str:
        """A variable or alias: an unquoted non-keyword word, or any `quoted` name."""
        t = self.tok
        if t.kind == "qword":
            self.i += 1
            return t.text
        if t.kind == "word":
            if t.text.upper() in allow.KEYWORDS:
                raise self.refuse(f"{t.text!r} is a keyword and cannot be used as {what} (quote it with backticks)")
            self.i += 1
            return t.text
        raise self.refuse(f"expected {what}")

    def key(self) -> str:
        """A property or map key: plain identifier characters (keywords are fine here)."""
        t = self.tok
        if t.kind in ("word", "qword") and t.text and (t.text[0].isalpha() or t.text[0] == "_") and t.text.isascii() \
                and all(c.isalnum() or c == "_" for c in t.text):
            self.i += 1
            return t.text
        raise self.refuse("expected a property name (letters, digits, _)")

    def bind(self, name: str) -> None:
        if name not in self.scope:
            self.scope.append(name)

    # -- expressions, lowest precedence first --
    def expr(self) -> Expr:
        self.depth += 1
        if self.depth > allow.MAX_DEPTH:
            raise self.refuse(f"the expression is nested more than {allow.MAX_DEPTH} levels deep")
        try:
            e = self.or_()
        finally:
            self.depth -= 1
        if self.depth == 0 and depth(e) > allow.MAX_TREE:
            # serializing is recursive: keep the tree well inside Python's recursion limit
            raise self.refuse(f"the expression has more than {allow.MAX_TREE} levels of operators")
        return e

    def _chain(self, words: tuple[str, ...], sub: Callable[[], Expr]) -> Expr:
        e = sub()
        while self.tok.kind == "word" and self.tok.text.upper() in words:
            op = self.tok.text.upper()
            self.i += 1
            e = Binary(op, e, sub())
        return e

    def or_(self) -> Expr:
        return self._chain(("OR",), self.xor_)

    def xor_(self) -> Expr:
        return self._chain(("XOR",), self.and_)

    def and_(self) -> Expr:
        return self._chain(("AND",), self.not_)

    def not_(self) -> Expr:
        if self.word("NOT"):
            self.depth += 1
            if self.depth > allow.MAX_DEPTH:
                raise self.refuse(f"the expression is nested more than {allow.MAX_DEPTH} levels deep")
            try:
                return Unary("NOT", self.not_())
            finally:
                self.depth -= 1
        return self.comparison()

    def comparison(self) -> Expr:
        e = self.predicate()
        if self.tok.kind == "punct" and self.tok.text in _COMPARE:
            op = self.tok.text
            self.i += 1
            e = Binary(op, e, self.predicate())
            if self.tok.kind == "punct" and self.tok.text in _COMPARE:
                raise self.refuse("chained comparisons are not supported; combine them with AND")
        return e

    def predicate(self) -> Expr:
        e = self.additive()
        while True:
            if self.word("IS"):
                neg = self.word("NOT")
                self.expect_word("NULL")
                e = IsNull(e, neg)
            elif self.word("IN"):
                e = Binary("IN", e, self.additive())
            elif self.word("CONTAINS"):
                e = Binary("CONTAINS", e, self.additive())
            elif self.tok.is_word("STARTS", "ENDS") and self.peek().is_word("WITH"):
                op = self.tok.text.upper() + " WITH"
                self.i += 2
                e = Binary(op, e, self.additive())
            else:
                return e

    def _binary(self, ops: tuple[str, ...], sub: Callable[[], Expr]) -> Expr:
        e = sub()
        while self.tok.kind == "punct" and self.tok.text in ops:
            op = self.tok.text
            self.i += 1
            e = Binary(op, e, sub())
        return e

    def additive(self) -> Expr:
        return self._binary(("+", "-"), self.multiplicative)

    def multiplicative(self) -> Expr:
        return self._binary(("*", "/", "%"), self.power)

    def power(self) -> Expr:
        return self._binary(("^",), self.unary)

    def unary(self) -> Expr:
        if self.tok.kind == "punct" and self.tok.text in ("-", "+"):
            op = self.tok.text
            self.i += 1
            self.depth += 1
            if self.depth > allow.MAX_DEPTH:
                raise self.refuse(f"the expression is nested more than {allow.MAX_DEPTH} levels deep")
            try:
                return Unary(op, self.unary())  # type: ignore[arg-type]
            finally:
                self.depth -= 1
        return self.postfix()

    def postfix(self) -> Expr:
        e = self.atom()
        while True:
            if self.eat("."):
                e = Prop(e, self.key())
            elif self.at("["):
                raise self.refuse("subscripts and slices ([...] after a value) are not supported")
            elif self.at("{"):
                raise self.refuse("map projections are not supported")
            else:
                return e

    def atom(self) -> Expr:
        t = self.tok
        if t.kind == "int":
            self.i += 1
            v = int(t.text)
            if v > 2**63 - 1:
                raise self.refuse("integer out of range")
            return Lit(v)
        if t.kind == "float":
            self.i += 1
            f = float(t.text)
            if f != f or f in (float("inf"), float("-inf")):
                raise self.refuse("number out of range")
            return Lit(f)
        if t.kind == "string":
            self.i += 1
            return Str(t.text)
        if t.kind == "param":
            self.i += 1
            if t.text.startswith("evomem_"):
                raise self.refuse("parameters named evomem_* are reserved")
            if t.text not in self.params:
                self.params.append(t.text)
            return Param(t.text)
        if self.eat("("):
            if self.tok.kind in ("word", "qword") and self.peek().kind == "punct" \
                    and self.peek().text in (":", ")") and self._pattern_ahead():
                raise self.refuse("patterns are only allowed in MATCH")
            e = self.expr()
            self.expect(")")
            return e
        if self.at("["):
            return self.list_literal()
        if self.at("{"):
            self.i += 1
            pairs: list[tuple[str, Expr]] = []
            if not self.at("}"):
                while True:
                    k = self.key()
                    self.expect(":")
                    pairs.append((k, self.expr()))
                    if not self.eat(","):
                        break
            self.expect("}")
            return MapLit(tuple(pairs))
        if t.kind == "word":
            up = t.text.upper()
            if up in ("TRUE", "FALSE"):
                self.i += 1
                return Lit(up == "TRUE")
            if up == "NULL":
                self.i += 1
                return Lit(None)
            if up == "CASE":
                return self.case()
            if self.peek().kind == "punct" and self.peek().text == "(":
                return self.call()
            if up in ("EXISTS", "COUNT", "COLLECT") and self.peek().kind == "punct" and self.peek().text == "{":
                raise self.refuse(f"{up} {{...}} subqueries are not allowed")
        if t.kind in ("word", "qword"):
            name = self.name("a variable")
            if name not in self.scope:
                raise self.refuse(f"variable {name!r} is not defined", t)
            return Var(name)
        raise self.refuse("expected a value")

    def _pattern_ahead(self) -> bool:
        """After '(' name: is this '(a)-' / '(a)<' / '(a:' i.e. a node pattern rather than a value?"""
        nxt = self.peek()
        if nxt.text == ":":
            return True
        after = self.peek(2)
        return after.kind == "punct" and after.text in ("-", "<") and self.peek(3).kind == "punct" \
            and self.peek(3).text in ("-", "[", ">")

    def list_literal(self) -> Expr:
        start = self.tok
        self.expect("[")
        if self.tok.kind in ("word", "qword") and self.peek().is_word("IN"):
            raise self.refuse("list comprehensions are not supported", start)
        if self.at("("):
            raise self.refuse("pattern comprehensions are not allowed", start)
        items: list[Expr] = []
        if not self.at("]"):
            while True:
                items.append(self.expr())
                if self.at("|"):
                    raise self.refuse("comprehensions are not supported", start)
                if not self.eat(","):
                    break
        self.expect("]")
        return ListLit(tuple(items))

    def case(self) -> Expr:
        self.expect_word("CASE")
        subject = None if self.tok.is_word("WHEN") else self.expr()
        whens = []
        while self.word("WHEN"):
            cond = self.expr()
            self.expect_word("THEN")
            whens.append((cond, self.expr()))
        if not whens:
            raise self.refuse("CASE needs at least one WHEN")
        default = self.expr() if self.word("ELSE") else None
        self.expect_word("END")
        return Case(subject, tuple(whens), default)

    def call(self) -> Expr:
        t = self.tok
        low = t.text.lower()
        self.i += 1
        self.expect("(")
        if low in allow.QUANTIFIERS:
            var = self.name("a variable")
            self.expect_word("IN")
            source = self.expr()
            self.expect_word("WHERE")
            outer = list(self.scope)
            self.bind(var)
            pred = self.expr()
            self.scope = outer
            self.expect(")")
            return Quant(low, var, source, pred)
        if low in allow.AGGREGATES:
            if low == "count" and self.eat("*"):
                self.expect(")")
                return Func("count", t.text, (), star=True)
            distinct = self.word("DISTINCT")
            arg = self.expr()
            self.expect(")")
            return Func(allow.AGGREGATES[low], t.text, (arg,), distinct)
        if low not in allow.FUNCTIONS:
            raise self.refuse(f"function {t.text}() is not allowed (allowed: "
                              f"{', '.join(sorted(set(allow.FUNCTIONS) | set(allow.AGGREGATES)))})", t)
        engine, lo, hi = allow.FUNCTIONS[low]
        args: list[Expr] = []
        if not self.at(")"):
            while True:
                args.append(self.expr())
                if not self.eat(","):
                    break
        self.expect(")")
        if not lo <= len(args) <= hi:
            raise self.refuse(f"{t.text}() takes {lo}{'' if lo == hi else f' to {hi}'} arguments", t)
        if engine == "range":
            nums = [a.value if isinstance(a, Lit) and type(a.value) is int else
                    -a.expr.value if isinstance(a, Unary) and a.op == "-" and isinstance(a.expr, Lit)
                    and type(a.expr.value) is int else None for a in args]
            if None in nums:
                raise self.refuse("range() takes whole-number literals only", t)
            step = nums[2] if len(nums) == 3 else 1
            if step == 0 or (nums[1] - nums[0]) // step + 1 > allow.MAX_RANGE:  # type: ignore[operator]
                raise self.refuse(f"range() may produce at most {allow.MAX_RANGE} numbers", t)
        return Func(engine, t.text, tuple(args))
