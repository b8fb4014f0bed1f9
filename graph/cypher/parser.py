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
from graph.cypher.ast import Clause, Expr, Item, Match, NodePat, PathPat, Projection, Query, RelPat, Unwind, Var
from graph.cypher.errors import CypherRefused
from graph.cypher.expr import ExprParser
from graph.cypher.lexer import tokenize
from graph.cypher.serialize import show


def parse(query: str) -> Query:
    """The AST of ``query``; raises CypherRefused (with what and where) for anything outside the subset."""
    return _Parser(tokenize(query)).query()


class _Parser(ExprParser):
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
