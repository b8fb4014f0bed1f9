"""The AST of the user-Cypher subset: only what the parser accepts can be represented."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Union


@dataclass(frozen=True)
class Lit:  # int, float, bool or None
    value: Any


@dataclass(frozen=True)
class Str:
    value: str


@dataclass(frozen=True)
class Param:
    name: str


@dataclass(frozen=True)
class Var:
    name: str


@dataclass(frozen=True)
class Prop:
    expr: Expr
    key: str


@dataclass(frozen=True)
class Func:
    name: str  # the engine's function name (from the allowlist)
    shown: str  # as the user wrote it, for column names
    args: tuple[Expr, ...]
    distinct: bool = False
    star: bool = False  # count(*)


@dataclass(frozen=True)
class Unary:
    op: Literal["-", "+", "NOT"]
    expr: Expr


@dataclass(frozen=True)
class Binary:
    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True)
class IsNull:
    expr: Expr
    negated: bool


@dataclass(frozen=True)
class ListLit:
    items: tuple[Expr, ...]


@dataclass(frozen=True)
class MapLit:
    pairs: tuple[tuple[str, Expr], ...]


@dataclass(frozen=True)
class Case:
    subject: Expr | None
    whens: tuple[tuple[Expr, Expr], ...]
    default: Expr | None


@dataclass(frozen=True)
class Quant:  # all/any/none/single(x IN list WHERE pred)
    kind: str
    var: str
    source: Expr
    pred: Expr


Expr = Union[Lit, Str, Param, Var, Prop, Func, Unary, Binary, IsNull, ListLit, MapLit, Case, Quant]


@dataclass(frozen=True)
class NodePat:
    var: str | None
    label: str | None
    props: tuple[tuple[str, Expr], ...]


@dataclass(frozen=True)
class RelPat:
    var: str | None
    types: tuple[str, ...]
    direction: Literal["out", "in", "both"]
    hops: tuple[int, int] | None  # variable length (min, max)
    props: tuple[tuple[str, Expr], ...]


@dataclass(frozen=True)
class PathPat:
    var: str | None
    nodes: tuple[NodePat, ...]
    rels: tuple[RelPat, ...]


@dataclass(frozen=True)
class Match:
    optional: bool
    paths: tuple[PathPat, ...]
    where: Expr | None


@dataclass(frozen=True)
class Unwind:
    expr: Expr
    var: str


@dataclass(frozen=True)
class Item:
    expr: Expr
    alias: str | None
    shown: str  # column name: the alias, or the expression as written (canonical spacing)


@dataclass(frozen=True)
class Projection:
    kind: Literal["WITH", "RETURN"]
    distinct: bool
    items: tuple[Item, ...]  # RETURN * / WITH * are expanded by the parser
    order: tuple[tuple[Expr, bool], ...]  # (expr, descending)
    skip: int | None
    limit: int | None
    where: Expr | None  # WITH only


Clause = Union[Match, Unwind, Projection]


@dataclass(frozen=True)
class Query:
    clauses: tuple[Clause, ...]
    params: tuple[str, ...]  # parameter names the query uses, in first-use order


def children(e: Expr) -> tuple[Expr, ...]:
    if isinstance(e, Prop):
        return (e.expr,)
    if isinstance(e, Func):
        return e.args
    if isinstance(e, Unary | IsNull):
        return (e.expr,)
    if isinstance(e, Binary):
        return (e.left, e.right)
    if isinstance(e, ListLit):
        return e.items
    if isinstance(e, MapLit):
        return tuple(v for _, v in e.pairs)
    if isinstance(e, Case):
        return tuple(x for x in (e.subject, e.default, *(y for w in e.whens for y in w)) if x is not None)
    if isinstance(e, Quant):
        return (e.source, e.pred)
    return ()


def depth(e: Expr) -> int:
    """Height of the expression tree, without recursion (operator chains like a+b+c+... are parsed
    by loops, so their height is bounded only here)."""
    best, stack = 0, [(e, 1)]
    while stack:
        x, d = stack.pop()
        best = max(best, d)
        stack.extend((c, d + 1) for c in children(x))
    return best
