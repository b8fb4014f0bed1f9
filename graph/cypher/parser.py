"""Recursive-descent parser for the read-only openCypher subset users may run on their own memory.

Why hand-written rather than the openCypher ANTLR grammar: the accepted language is small (read
clauses, one label per node, an allowlist of functions), and an allowlist is easiest to audit when
the parser can only *build* what is allowed — there is no full-language tree to filter afterwards.
It also needs no generated code or runtime dependency, runs in linear time over a bounded token
list, and its recursion is bounded (MAX_DEPTH). Whatever it does not know is refused with a
message naming the token and position; keywords are never names unless backtick-quoted.
"""

from __future__ import annotations

from graph.cypher import allow
from graph.cypher.ast import (Binary, Case, Clause, Expr, Func, IsNull, Item, ListLit, Lit, MapLit, Match, NodePat,
                              Param, PathPat, Projection, Prop, Quant, Query, RelPat, Str, Unary, Unwind, Var)
from graph.cypher.errors import CypherRefused
from graph.cypher.lexer import Token, tokenize
from graph.cypher.serialize import show

_COMPARE = ("=", "<>", "<", ">", "<=", ">=")


def parse(query: str) -> Query:
    """The AST of ``query``; raises CypherRefused (with what and where) for anything outside the subset."""
    return _Parser(tokenize(query)).query()


class _Parser:
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

    # -- clauses --
    def query(self) -> Query:
        clauses: list[Clause] = []
        while True:
            t = self.tok
            if t.kind == "end" or (self.at(";") and self.peek().kind == "end"):
                break
            if self.at(";"):
                raise self.refuse("only one statement is allowed")
            if t.kind != "word":
                raise self.refuse("expected a clause (MATCH, OPTIONAL MATCH, UNWIND, WITH, RETURN)")
            up = t.text.upper()
            if clauses and isinstance(clauses[-1], Projection) and clauses[-1].kind == "RETURN":
                raise self.refuse("RETURN must be the last clause")
            if up == "MATCH" or up == "OPTIONAL":
                clauses.append(self.match())
            elif up == "UNWIND":
                self.i += 1
                e = self.expr()
                self.expect_word("AS")
                v = self.name("a variable")
                self.bind(v)
                clauses.append(Unwind(e, v))
            elif up in ("WITH", "RETURN"):
                clauses.append(self.projection(up))
            elif up in allow.WRITE_WORDS:
                raise self.refuse(f"{up} is a write clause; user Cypher is read-only")
            elif up in allow.REFUSED_CLAUSES:
                raise self.refuse(allow.REFUSED_CLAUSES[up])
            else:
                raise self.refuse("expected a clause (MATCH, OPTIONAL MATCH, UNWIND, WITH, RETURN)")
        if not clauses or not (isinstance(clauses[-1], Projection) and clauses[-1].kind == "RETURN"):
            raise CypherRefused("the query must end in RETURN")
        return Query(tuple(clauses), tuple(self.params))

    def match(self) -> Match:
        optional = self.word("OPTIONAL")
        self.expect_word("MATCH")
        paths = [self.path()]
        while self.eat(","):
            paths.append(self.path())
        where = self.expr() if self.word("WHERE") else None
        return Match(optional, tuple(paths), where)

    def path(self) -> PathPat:
        var = None
        if self.tok.kind in ("word", "qword") and self.peek().kind == "punct" and self.peek().text == "=":
            var = self.name("a path variable")
            self.expect("=")
        if self.tok.is_word("SHORTESTPATH", "ALLSHORTESTPATHS", "SHORTEST"):
            raise self.refuse("shortest-path patterns are not supported")
        nodes, rels = [self.node()], []
        while self.at("-") or self.at("<"):
            rels.append(self.rel())
            nodes.append(self.node())
        if var is not None:
            self.bind(var)
        return PathPat(var, tuple(nodes), tuple(rels))

    def node(self) -> NodePat:
        self.expect("(")
        var = self.name("a node variable") if self.tok.kind in ("word", "qword") else None
        label = None
        if self.eat(":"):
            label = self.label(allow.LABELS, "label")
            if self.at(":") or self.at("|"):
                raise self.refuse("one label per node")
        if self.tok.is_word("WHERE"):
            raise self.refuse("WHERE inside a node pattern is not supported; use a WHERE clause")
        props = self.props()
        self.expect(")")
        if var is not None:
            self.bind(var)
        return NodePat(var, label, props)

    def label(self, known: tuple[str, ...], what: str) -> str:
        t = self.tok
        if t.kind not in ("word", "qword") or t.text not in known:
            raise self.refuse(f"unknown {what} (known: {', '.join(known)})")
        self.i += 1
        return t.text

    def props(self) -> tuple[tuple[str, Expr], ...]:
        if not self.eat("{"):
            return ()
        out: list[tuple[str, Expr]] = []
        if not self.at("}"):
            while True:
                k = self.key()
                if k == "user_id":
                    raise self.refuse("user_id is set by the server, not by the query")
                self.expect(":")
                out.append((k, self.expr()))
                if not self.eat(","):
                    break
        self.expect("}")
        return tuple(out)

    def rel(self) -> RelPat:
        left = self.eat("<")
        self.expect("-")
        var: str | None = None
        types: tuple[str, ...] = ()
        hops: tuple[int, int] | None = None
        props: tuple[tuple[str, Expr], ...] = ()
        if self.eat("["):
            var = self.name("a relationship variable") if self.tok.kind in ("word", "qword") else None
            if self.eat(":"):
                ts = [self.label(allow.REL_TYPES, "relationship type")]
                while self.eat("|"):
                    self.eat(":")
                    ts.append(self.label(allow.REL_TYPES, "relationship type"))
                types = tuple(ts)
            if self.eat("*"):
                hops = self.hops()
            props = self.props()
            if hops and props:
                raise self.refuse("properties on a variable-length relationship are not supported")
            self.expect("]")
        self.expect("-")
        right = self.eat(">")
        if left and right:
            raise self.refuse("a relationship cannot point both ways")
        if var is not None:
            self.bind(var)
        return RelPat(var, types, "in" if left else "out" if right else "both", hops, props)

    def hops(self) -> tuple[int, int]:
        has_lo = self.tok.kind == "int"
        lo = self.small_int() if has_lo else 1
        hi = lo if has_lo and not self.at("..") else None  # *3 is exactly 3; a bare * is unbounded
        if self.eat(".."):
            hi = self.small_int() if self.tok.kind == "int" else None
        if hi is None:
            raise self.refuse(f"give variable-length relationships an upper bound <= {allow.MAX_HOPS}, e.g. *1..3")
        if not (0 <= lo <= hi <= allow.MAX_HOPS):
            raise self.refuse(f"variable-length bounds must satisfy 0 <= min <= max <= {allow.MAX_HOPS}")
        return lo, hi

    def small_int(self, limit: int = allow.MAX_SKIP_LIMIT) -> int:
        t = self.tok
        if t.kind != "int" or int(t.text) > limit:
            raise self.refuse(f"expected a whole number <= {limit}")
        self.i += 1
        return int(t.text)

    def projection(self, kind: str) -> Projection:
        self.i += 1
        distinct = self.word("DISTINCT")
        items: list[Item] = []
        if self.eat("*"):
            if not self.scope:
                raise self.refuse(f"{kind} * with no variables in scope")
            items = [Item(Var(v), None, v) for v in self.scope]
            if self.eat(","):
                items += self.items(kind)
        else:
            items = self.items(kind)
        shown = [it.alias or it.shown for it in items]
        dup = next((s for s in shown if shown.count(s) > 1), None)
        if dup is not None:
            raise CypherRefused(f"{kind} names the column {dup!r} twice; give one of them another name with AS")
        # ORDER BY sees the old scope and the new names; the clause after sees only the new names
        new_scope = [it.alias or it.expr.name for it in items if it.alias or isinstance(it.expr, Var)]  # type: ignore[union-attr]
        for v in new_scope:
            self.bind(v)
        order: list[tuple[Expr, bool]] = []
        if self.word("ORDER"):
            self.expect_word("BY")
            while True:
                e = self.expr()
                desc = self.tok.is_word("DESC", "DESCENDING")
                if self.word("ASC", "ASCENDING", "DESC", "DESCENDING"):
                    pass
                order.append((e, desc))
                if not self.eat(","):
                    break
        skip = self.small_int() if self.word("SKIP") else None
        limit = self.small_int() if self.word("LIMIT") else None
        self.scope = list(dict.fromkeys(new_scope))
        where = None
        if kind == "WITH" and self.word("WHERE"):
            where = self.expr()
        return Projection(kind, distinct, tuple(items), tuple(order), skip, limit, where)  # type: ignore[arg-type]

    def items(self, kind: str) -> list[Item]:
        out = []
        while True:
            e = self.expr()
            alias = self.name("an alias") if self.word("AS") else None
            if kind == "WITH" and alias is None and not isinstance(e, Var):
                raise self.refuse("expressions in WITH need a name: add AS <name>")
            out.append(Item(e, alias, show(e)))
            if not self.eat(","):
                return out

    # -- expressions, lowest precedence first --
    def expr(self) -> Expr:
        self.depth += 1
        if self.depth > allow.MAX_DEPTH:
            raise self.refuse(f"the expression is nested more than {allow.MAX_DEPTH} levels deep")
        try:
            return self.or_()
        finally:
            self.depth -= 1

    def _chain(self, words: tuple[str, ...], sub) -> Expr:  # type: ignore[no-untyped-def]
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

    def _binary(self, ops: tuple[str, ...], sub) -> Expr:  # type: ignore[no-untyped-def]
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
