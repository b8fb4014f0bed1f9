"""Concept subcommand: the user's live concept tree, with counts and the latest concept edits.

    evomem concepts --user conv-26                # the tree as text
    evomem concepts --user conv-26 --svg tree.svg # and as a picture
    evomem concepts --user conv-26 --json         # as a structure

A reading command: it opens the store and loads no model.
"""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path

from pydantic import Field

from evomem.commands.common import Command, CommonOptions, _print


class ConceptsOptions(CommonOptions):
    user: str = Field(description="User id.")
    edits: int = Field(default=10, ge=0, description="How many of the latest CREATE / MERGE / SPLIT edits to list.")
    describe: bool = Field(default=False, description="Print each concept's one-line description under it.")
    svg: str | None = Field(default=None, description="Also draw the tree into this SVG file.")


def cmd_concepts(opts: ConceptsOptions) -> int:
    from graph.concept_tree import concept_edits, describe_edit, live_tree, render_svg, render_text, tree_depth
    from graph.store import UnknownUser
    from memcore.memory import Memory

    mem = Memory.from_settings(opts.settings())
    try:
        mem.require_user(opts.user)
        snap = mem.store.load_snapshot(opts.user)
    except UnknownUser as e:
        print(f"evomem concepts: {e.args[0]}", file=sys.stderr)
        return 2
    finally:
        mem.close()
    if opts.svg:
        Path(opts.svg).write_text(render_svg(snap))
    tree = live_tree(snap)
    data = {"user_id": opts.user, "depth": tree_depth(tree), "top_level": len(tree),
            "tree": [asdict(n) for n in tree],
            "edits": [{"edit_id": e.edit_id, "seq": e.seq, "op": e.op, "session_id": e.session_id,
                       "undone": e.undone_at is not None, "line": describe_edit(snap, e)}
                      for e in reversed(concept_edits(snap, opts.edits))] if opts.edits else [],
            "svg": opts.svg}
    _print(opts, data, lambda: render_text(snap, opts.edits, opts.describe)
           + (f"\n\nwrote {opts.svg}" if opts.svg else ""))
    return 0


COMMANDS: dict[str, Command] = {
    "concepts": (ConceptsOptions, cmd_concepts, "The user's live concept tree: counts, latest concept edits, --svg."),
}
