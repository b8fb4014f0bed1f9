"""Tenant ids: the one user-id pattern, and the owner namespace carried by server-made ids.

Stored keys are built from the user id (``{user}::f::…``, ``{user}::c::…``, ``{user}::root`` in
induction; ``{user}/{turn}`` and ``{user}/{session}`` in graph/serialize.py). Those keys are unique
per user only if a user id can contain neither separator, which USER_ID_PATTERN guarantees.
Pure functions, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Annotated

from pydantic import AfterValidator

USER_ID_MAX_LEN = 128
# Letters, digits, '.', '_', '@', '-'; starts with a letter or digit; at most 128 characters; no '..'.
# So no '/', ':', whitespace, NUL, '%' or other control/escape characters, and never '.' or '..'.
USER_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$"
_USER_ID = re.compile(USER_ID_PATTERN)
NAMESPACE_SEP = "::"


class InvalidUserId(ValueError):
    """A user id outside USER_ID_PATTERN (the HTTP layer answers 400)."""


def validate_user_id(user_id: object) -> str:
    """Return ``user_id`` if it is a valid user id, else raise InvalidUserId saying why.

    >>> validate_user_id("maya.k@example-1")
    'maya.k@example-1'
    """
    if not isinstance(user_id, str):
        raise InvalidUserId(f"invalid user id: expected a string, got {type(user_id).__name__}")
    if len(user_id) > USER_ID_MAX_LEN:  # checked first: never echo or regex a huge value
        raise InvalidUserId(f"invalid user id: longer than {USER_ID_MAX_LEN} characters ({len(user_id)})")
    if not _USER_ID.fullmatch(user_id):
        raise InvalidUserId("invalid user id: use 1-128 characters from A-Z a-z 0-9 . _ @ -, "
                            "starting with a letter or digit")
    if ".." in user_id:
        raise InvalidUserId("invalid user id: '..' is not allowed")
    return user_id


# A str field that only accepts valid user ids (pydantic raises ValidationError with the reason).
UserId = Annotated[str, AfterValidator(validate_user_id)]


def id_owner(item_id: str) -> str | None:
    """The owner namespace of an id (the part before the first '::'), or None if it has none.

    >>> id_owner("leo::c::food/drinks"), id_owner("c1"), id_owner("::x")
    ('leo', None, '')
    """
    head, sep, _ = item_id.partition(NAMESPACE_SEP)
    return head if sep else None


def foreign_ids(user_id: str, ids: Iterable[str]) -> list[str]:
    """The ids that carry another owner's namespace: ``user_id`` may not create or name them.

    >>> foreign_ids("maya", ["maya::f::1", "c1", "leo::f::2", "::x"])
    ['leo::f::2', '::x']
    """
    return [i for i in ids if id_owner(i) not in (None, user_id)]
