"""The policy seam: anything that turns (request, evidence) into a Reasoning State."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from retrieval.retrieve import EvidenceBundle
from policy.state import ReasoningState


@runtime_checkable
class Policy(Protocol):
    name: str

    def state(self, request: str, bundle: EvidenceBundle) -> ReasoningState:
        """A Reasoning State for ``request`` over ``bundle``'s facts (aliases F1, F2, ...).

        Raises policy.state.StateParseError when a model's output is not a valid state."""
