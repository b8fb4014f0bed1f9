"""The live concept tree of one user, read from a snapshot: as a structure, as text and as an SVG picture.

Pure Python over ``Snapshot`` (no model, no numpy), so a reading command can show it without loading
anything heavy. Retired (merged-away) concepts are left out; every node counts its own facts and the
facts of its whole subtree (retracted facts are not counted).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape

from graph.models import Edit
from graph.snapshot import Snapshot

_CONCEPT_OPS = ("CREATE", "MERGE", "SPLIT", "RENAME")


@dataclass
class ConceptNode:
    concept_id: str
    name: str
    description: str = ""
    facts: int = 0  # its own facts
    total: int = 0  # its own and its descendants' facts
    children: list[ConceptNode] = field(default_factory=list)

    def depth(self) -> int:
        return 1 + max((c.depth() for c in self.children), default=0)

    def walk(self) -> list[ConceptNode]:
        return [self, *(n for c in self.children for n in c.walk())]


def live_tree(snap: Snapshot) -> list[ConceptNode]:
    """The root's live children, each with its subtree, largest first (ties by id)."""
    live = {c: v for c, v in snap.concepts.items() if v.retired_at is None}
    own: dict[str, int] = {}
    for f, c in snap.fact_concept.items():
        fact = snap.facts.get(f)
        if fact is not None and fact.retracted_at is None:
            own[c] = own.get(c, 0) + 1
    kids: dict[str, list[str]] = {}
    for c, p in snap.parent.items():
        if c in live:
            kids.setdefault(p, []).append(c)

    def build(cid: str, seen: frozenset[str]) -> ConceptNode:
        c = live[cid]
        node = ConceptNode(cid, c.name, c.description, own.get(cid, 0))
        node.children = [build(k, seen | {k}) for k in kids.get(cid, []) if k not in seen]
        node.children.sort(key=lambda n: (-n.total, n.concept_id))
        node.total = node.facts + sum(ch.total for ch in node.children)
        return node

    top = [build(c, frozenset({snap.root_id, c})) for c in kids.get(snap.root_id, [])]
    return sorted(top, key=lambda n: (-n.total, n.concept_id))


def tree_depth(tree: list[ConceptNode]) -> int:
    return max((n.depth() for n in tree), default=0)


def concept_edits(snap: Snapshot, last: int | None = None) -> list[Edit]:
    """The CREATE / MERGE / SPLIT / RENAME edits in the log, oldest first (``last``: only the newest n)."""
    out = sorted((e for e in snap.edits.values() if e.op in _CONCEPT_OPS), key=lambda e: e.seq)
    return out[-last:] if last else out


def describe_edit(snap: Snapshot, e: Edit) -> str:
    """One line per concept edit, with concept names rather than ids."""
    p = e.payload

    def nm(cid: object) -> str:
        c = snap.concepts.get(str(cid))
        return repr(c.name) if c is not None else str(cid)

    undone = " (undone)" if e.undone_at is not None else ""
    sess = f" [{e.session_id}]" if e.session_id else ""
    if e.op == "CREATE":
        body = f"CREATE {nm(p.get('concept_id'))} under {nm(p.get('parent_id'))}"
    elif e.op == "MERGE":
        body = f"MERGE {nm(p.get('source_id'))} into {nm(p.get('target_id'))} ({len(p.get('moved_facts', []))} facts)"
    elif e.op == "RENAME":
        body = f"RENAME {p.get('previous_name')!r} to {p.get('name')!r}"
    else:
        moves = p.get("moves", {})
        kids = ", ".join(f"{nm(c)} ({sum(1 for v in moves.values() if v == c)})" for c in p.get("children", []))
        body = f"SPLIT {nm(p.get('concept_id'))} into {kids}"
    return f"#{e.seq} {body}{sess}{undone}"


def render_text(snap: Snapshot, edits: int = 10, describe: bool = False) -> str:
    tree = live_tree(snap)
    lines = [f"{snap.user_id}: {sum(n.total for n in tree)} facts, {len(tree)} top-level concepts, "
             f"depth {tree_depth(tree)}"]

    def walk(n: ConceptNode, d: int) -> None:
        own = f", {n.facts} here" if n.children and n.facts else ""
        lines.append(f"{'  ' * d}- {n.name} ({n.total} facts{own})")
        if describe and n.description:
            lines.append(f"{'  ' * (d + 1)}{n.description}")
        for ch in n.children:
            walk(ch, d + 1)

    for n in tree:
        walk(n, 0)
    log = concept_edits(snap, edits) if edits else []
    if log:
        lines += ["", f"latest concept edits ({len(log)} of {len(concept_edits(snap))}):"]
        lines += [f"  {describe_edit(snap, e)}" for e in reversed(log)]
    return "\n".join(lines)


_PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f")


def render_svg(snap: Snapshot, title: str | None = None, max_children: int = 12) -> str:
    """The tree as an indented picture: one row per concept, a bar as long as its fact count, coloured by
    top-level branch, elbow lines to the parent. Self-contained SVG 1.1, no script, no external font."""
    tree = live_tree(snap)
    rows: list[tuple[int, ConceptNode, int, int | None]] = []  # (depth, node, colour index, parent row)

    def walk(n: ConceptNode, d: int, colour: int, parent: int | None) -> None:
        me = len(rows)
        rows.append((d, n, colour, parent))
        for ch in n.children[:max_children]:
            walk(ch, d + 1, colour, me)

    for i, n in enumerate(tree):
        walk(n, 0, i % len(_PALETTE), None)
    biggest = max((n.total for _, n, _, _ in rows), default=1) or 1
    row_h, indent, left, top = 22, 22, 16, 56
    text_w, bar_w = 420, 260
    width = left + 6 * indent + text_w + bar_w + 60
    height = top + row_h * len(rows) + 24
    head = title or f"{snap.user_id}: {len(tree)} top-level concepts, depth {tree_depth(tree)}"
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
           f'font-family="Helvetica, Arial, sans-serif" font-size="13">',
           f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
           f'<text x="{left}" y="28" font-size="17" font-weight="bold" fill="#222">{escape(head)}</text>',
           f'<text x="{left}" y="46" font-size="11" fill="#777">bar length = facts under the concept; '
           f'rows are concepts, indented under their parent</text>']
    for r, (d, n, colour, parent) in enumerate(rows):
        y = top + r * row_h
        x = left + d * indent
        col = _PALETTE[colour]
        if parent is not None:
            py = top + parent * row_h + 14
            px = left + (d - 1) * indent + 6
            out.append(f'<path d="M{px} {py} V{y + 9} H{x}" stroke="#bbb" fill="none"/>')
        out.append(f'<circle cx="{x + 6}" cy="{y + 9}" r="{5 if d == 0 else 4}" fill="{col}"/>')
        weight = ' font-weight="bold"' if d == 0 else ""
        label = n.name if len(n.name) <= 48 else n.name[:47] + "…"
        desc = f"<title>{escape(n.description or n.name)}</title>"
        out.append(f'<text x="{x + 16}" y="{y + 13}" fill="#222"{weight}>{desc}{escape(label)}</text>')
        bx = left + 6 * indent + text_w
        w = max(2, round(bar_w * n.total / biggest))
        out.append(f'<rect x="{bx}" y="{y + 3}" width="{w}" height="12" rx="2" fill="{col}" '
                   f'fill-opacity="{1.0 if d == 0 else 0.65}"/>')
        out.append(f'<text x="{bx + w + 6}" y="{y + 13}" fill="#555" font-size="11">{n.total}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


__all__ = ["ConceptNode", "concept_edits", "describe_edit", "live_tree", "render_svg", "render_text", "tree_depth"]
