"""A reading cue as named linguistic classes, compiled into one regular expression.

Each class is one alternative of the cue's regex: ``head + "|".join(classes) + tail``. Splitting a cue into
classes states what each part covers, and lets a table test give every class its own test sentence
(tests/test_reading.py checks that each class matches its sentence on its own and that no class is untested).
"""

from __future__ import annotations

import re
from collections.abc import Sequence


class CueSet:
    """Alternatives grouped by the linguistic class each covers; ``regex`` is all of them in one pattern.

    >>> c = CueSet("demo", [("greeting", r"hi|hello"), ("farewell", r"bye")])
    >>> bool(c.regex.search("Hello there")), bool(c.of("farewell").search("hello"))
    (True, False)
    """

    def __init__(self, name: str, classes: Sequence[tuple[str, str]], head: str = r"\b(?:", tail: str = r")\b",
                 flags: int = re.I) -> None:
        names = [n for n, _ in classes]
        if len(set(names)) != len(names):
            raise ValueError(f"{name}: class names repeat: {names}")
        self.name, self.classes, self.head, self.tail, self.flags = name, tuple(classes), head, tail, flags
        self.pattern = head + "|".join(p for _, p in self.classes) + tail
        self.regex = re.compile(self.pattern, flags)

    def names(self) -> list[str]:
        return [n for n, _ in self.classes]

    def of(self, name: str) -> re.Pattern[str]:
        """One class alone, inside the same head and tail."""
        return re.compile(self.head + dict(self.classes)[name] + self.tail, self.flags)

    def alternatives(self) -> tuple[str, ...]:
        """The classes' patterns, in order (for a caller that joins them into a larger cue)."""
        return tuple(p for _, p in self.classes)
