"""Data subcommands: profile (a user's memory at a glance), export, import and migrate (graph/portable.py)."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from evomem.commands.common import Command, CommonOptions, _print


class ProfileOptions(CommonOptions):
    user: str = Field(description="User id.")
    latest: int = Field(default=10, ge=0, description="How many recent changes to list.")
    as_of: datetime | None = Field(default=None, description="Valid time (ISO date): what was true then.")
    known_at: datetime | None = Field(default=None, description="Recorded time (ISO date): what memory knew then.")


def cmd_profile(opts: ProfileOptions) -> int:
    from graph.timeline import TimeView
    from memcore.memory import Memory
    from memcore.profile import build_profile

    mem = Memory.from_settings(opts.settings())
    try:
        prof = build_profile(mem, opts.user, opts.latest, TimeView(as_of=opts.as_of, known_at=opts.known_at))
    finally:
        mem.close()
    _print(opts, prof.model_dump(mode="json"), prof.text)
    return 0


COMMANDS: dict[str, Command] = {
    "profile": (ProfileOptions, cmd_profile, "A user's current facts by concept, counts per validity, latest changes."),
}
