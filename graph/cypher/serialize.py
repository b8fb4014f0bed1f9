"""Canonical Cypher from the AST: the only text that reaches the engine.

Nothing the user typed is copied through: variables become v0, v1, ..., columns c0, c1, ...,
string literals become parameters, labels and functions come from the allowlist, and every binary
operator is fully parenthesized with spaces around it. So comments, odd whitespace, unicode and
keyword-named variables cannot survive, and no two tokens of the output can read as a pattern
(``--``, ``->``, ``<-``, ``-[``) outside MATCH. Every node pattern gets ``v.user_id = $evomem_uid``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from graph.cypher.errors import CypherRefused
from graph.cypher.ast import (Binary, Case, Expr, Func, IsNull, ListLit, Lit, MapLit, Match, NodePat, Param, PathPat,
                              Projection, Prop, Quant, Query, RelPat, Str, Unary, Unwind, Var)

UID_PARAM = "evomem_uid"
# String literals made only of these characters are written inline; any other goes in as a parameter.
_SAFE = re.compile(r"[A-Za-z0-9 _.,:;!?@#%&()+=<>|~^-]{0,200}")


@dataclass
class Compiled:
    text: str  # canonical Cypher
    params: dict[str, Any]  # engine parameters (string literals, the user's parameters, the uid)
    columns: list[str]  # display name of each returned column c0, c1, ...
    names: dict[str, str] = field(default_factory=dict)  # engine variable -> user name (for error messages)


def _lit(v: Any) -> str:
    if v is None:
        return "NULL"
    if v is True or v is False:
        return "true" if v else "false"
    return repr(v)  # int or finite float: digits, '.', 'e', '-'


def show(e: Expr) -> str:
    """The expression as a column name, in the user's names (Neo4j-like: ``f.statement``, ``count(f)``)."""
    if isinstance(e, Lit):
        return _lit(e.value)
    if isinstance(e, Str):
        return "'" + e.value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(e, Param):
        return f"${e.name}"
    if isinstance(e, Var):
        return e.name
    if isinstance(e, Prop):
        return f"{show(e.expr)}.{e.key}"
    if isinstance(e, Func):
        inner = "*" if e.star else ", ".join(show(a) for a in e.args)
        return f"{e.shown}({'DISTINCT ' if e.distinct else ''}{inner})"
    if isinstance(e, Unary):
        return f"NOT {show(e.expr)}" if e.op == "NOT" else f"{e.op}{show(e.expr)}"
    if isinstance(e, Binary):
        return f"{show(e.left)} {e.op} {show(e.right)}"
    if isinstance(e, IsNull):
        return f"{show(e.expr)} IS {'NOT ' if e.negated else ''}NULL"
    if isinstance(e, ListLit):
        return "[" + ", ".join(show(i) for i in e.items) + "]"
    if isinstance(e, MapLit):
        return "{" + ", ".join(f"{k}: {show(v)}" for k, v in e.pairs) + "}"
    if isinstance(e, Case):
        return "CASE ... END"
    if isinstance(e, Quant):
        return f"{e.kind}({e.var} IN {show(e.source)} WHERE {show(e.pred)})"
    raise TypeError(e)


class _Emitter:
    def __init__(self, user_params: dict[str, Any], user_id: str):
        self.vars: dict[str, str] = {}
        self.params: dict[str, Any] = {UID_PARAM: user_id}
        self.user_params = user_params
        self.anon = 0
        self.in_lambda = 0

    def var(self, name: str) -> str:
        if name not in self.vars:
            self.vars[name] = f"v{len(self.vars)}"
        return self.vars[name]

    def fresh(self) -> str:
        self.anon += 1
        return f"a{self.anon}"

    def param(self, value: Any) -> str:
        name = f"s{len(self.params)}"
        self.params[name] = value
        return f"${name}"

    def expr(self, e: Expr, cols: dict[str, str] | None = None) -> str:
        x = self.expr
        if isinstance(e, Lit):
            return _lit(e.value)
        if isinstance(e, Str):
            if _SAFE.fullmatch(e.value):
                return f"'{e.value}'"  # no quote, backslash or comment characters: nothing to escape
            if self.in_lambda:
                raise CypherRefused("inside all/any/none/single, strings may hold only letters, digits, spaces "
                                    "and simple punctuation, and parameters cannot be used")
            return self.param(e.value)
        if isinstance(e, Param):
            if self.in_lambda:
                raise CypherRefused("parameters cannot be used inside all/any/none/single")
            return self.param(self.user_params[e.name])
        if isinstance(e, Var):
            if cols and e.name in cols:
                return cols[e.name]
            return self.var(e.name)
        if isinstance(e, Prop):
            return f"{x(e.expr, cols)}.`{e.key}`"
        if isinstance(e, Func):
            inner = "*" if e.star else ", ".join(x(a, cols) for a in e.args)
            return f"{e.name}({'DISTINCT ' if e.distinct else ''}{inner})"
        if isinstance(e, Unary):
            # unary minus as (0 - x): never a '-' directly before '(' or '[' of another operand
            return f"(NOT ({x(e.expr, cols)}))" if e.op == "NOT" else \
                f"(0 - ({x(e.expr, cols)}))" if e.op == "-" else f"({x(e.expr, cols)})"
        if isinstance(e, Binary):
            return f"(({x(e.left, cols)}) {e.op} ({x(e.right, cols)}))"
        if isinstance(e, IsNull):
            return f"(({x(e.expr, cols)}) IS {'NOT ' if e.negated else ''}NULL)"
        if isinstance(e, ListLit):
            return "[" + ", ".join(f"({x(i, cols)})" for i in e.items) + "]"
        if isinstance(e, MapLit):
            return "{" + ", ".join(f"`{k}`: ({x(v, cols)})" for k, v in e.pairs) + "}"
        if isinstance(e, Case):
            s = "CASE" + (f" ({x(e.subject, cols)})" if e.subject is not None else "")
            s += "".join(f" WHEN ({x(c, cols)}) THEN ({x(v, cols)})" for c, v in e.whens)
            return s + (f" ELSE ({x(e.default, cols)})" if e.default is not None else "") + " END"
        if isinstance(e, Quant):
            src = x(e.source, cols)
            self.in_lambda += 1  # the engine cannot bind parameters inside the predicate (a lambda)
            try:
                pred = x(e.pred, cols)
            finally:
                self.in_lambda -= 1
            return f"{e.kind}({self.var(e.var)} IN ({src}) WHERE ({pred}))"
        raise TypeError(e)

    def node(self, n: NodePat, conds: list[str]) -> str:
        v = self.var(n.var) if n.var is not None else self.fresh()
        conds.append(f"({v}.`user_id` = ${UID_PARAM})")
        conds += [f"({v}.`{k}` = ({self.expr(val)}))" for k, val in n.props]
        return f"({v}{':' + n.label if n.label else ''})"

    def rel(self, r: RelPat, conds: list[str]) -> str:
        v = self.var(r.var) if r.var is not None else self.fresh()
        conds += [f"({v}.`{k}` = ({self.expr(val)}))" for k, val in r.props]
        body = v + (":" + "|".join(r.types) if r.types else "") + (f"*{r.hops[0]}..{r.hops[1]}" if r.hops else "")
        return ("<-" if r.direction == "in" else "-") + f"[{body}]" + ("->" if r.direction == "out" else "-")

    def path(self, p: PathPat, conds: list[str]) -> str:
        s = self.node(p.nodes[0], conds)
        for r, n in zip(p.rels, p.nodes[1:]):
            s += self.rel(r, conds) + self.node(n, conds)
        return (f"{self.var(p.var)} = " if p.var is not None else "") + s

    def projection(self, p: Projection, columns: list[str]) -> str:
        parts = [p.kind + (" DISTINCT" if p.distinct else "")]
        cols: dict[str, str] = {}
        items = []
        for it in p.items:
            e = self.expr(it.expr)
            if p.kind == "RETURN":
                c = f"c{len(columns)}"
                columns.append(it.alias or it.shown)
                for nm in (it.alias, it.expr.name if isinstance(it.expr, Var) and not it.alias else None):
                    if nm:
                        cols[nm] = c
                items.append(f"{e} AS {c}")
            else:
                items.append(f"{e} AS {self.var(it.alias or it.expr.name)}")  # type: ignore[union-attr]
        parts.append(", ".join(items))
        if p.order:
            parts.append("ORDER BY " + ", ".join(self.expr(e, cols) + (" DESC" if d else "") for e, d in p.order))
        if p.skip is not None:
            parts.append(f"SKIP {p.skip}")
        if p.limit is not None:
            parts.append(f"LIMIT {p.limit}")
        if p.where is not None:
            parts.append(f"WHERE ({self.expr(p.where)})")
        return " ".join(parts)


def emit(q: Query, params: dict[str, Any], user_id: str) -> Compiled:
    """Canonical Cypher for ``q`` with every node pinned to ``user_id`` (bound as ``$evomem_uid``)."""
    em = _Emitter(params, user_id)
    out: list[str] = []
    columns: list[str] = []
    for c in q.clauses:
        if isinstance(c, Match):
            conds: list[str] = []
            pats = ", ".join(em.path(p, conds) for p in c.paths)
            if c.where is not None:
                conds.append(f"({em.expr(c.where)})")
            out.append(("OPTIONAL MATCH " if c.optional else "MATCH ") + pats + " WHERE " + " AND ".join(conds))
        elif isinstance(c, Unwind):
            out.append(f"UNWIND ({em.expr(c.expr)}) AS {em.var(c.var)}")
        else:
            out.append(em.projection(c, columns))
    return Compiled(" ".join(out), em.params, columns, {v: k for k, v in em.vars.items()})
