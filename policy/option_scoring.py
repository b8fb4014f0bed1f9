"""The option scoring every frozen reader shares (issue 48): a reader gives ``option_logprobs`` (one score per
option, any scale: only their softmax is read) and gets ``graded`` / ``answer_text`` / ``graded_choice`` from
``OptionScoring``; ``LMAnswerModel`` (``policy/lmreader.py``) wraps anything that satisfies ``OptionReader``.

Readers: ``policy.lmreader.LMReader`` (SmolLM2 log-likelihood; it also answers open rows),
``policy.xreader.XReader`` (the MiniLM cross-encoder), ``policy.xreader_fast.XFastReader`` (the fast head).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from policy.state import ReasoningState
from retrieval.retrieve import EvidenceBundle
from training_data.base import TrainingInstance

Shown = ReasoningState | str  # a state, or a condition: "none" (no memory) / "evidence" (memory without a state)


def choice_index(choices: Sequence[str], reference: str) -> int | None:
    """Index of ``reference`` among ``choices`` (case and outer spaces ignored), None when it is not one.

    >>> choice_index(["Go north.", "Go south."], " go south. ")
    1
    """
    norm = [c.strip().lower() for c in choices]
    r = reference.strip().lower()
    return norm.index(r) if r in norm else None


def best_index(lps: Sequence[float]) -> int:
    """The highest score; ties go to the first option."""
    return max(range(len(lps)), key=lambda k: (lps[k], -k))


@runtime_checkable
class OptionReader(Protocol):
    """What ``LMAnswerModel`` needs of a frozen reader."""

    name: str

    def answer_text(self, request: str, bundle: EvidenceBundle, choices: Sequence[str] | None,
                    state: Shown) -> str: ...

    def graded(self, instance: TrainingInstance, state: Shown) -> float: ...


class OptionScoring:
    """Mixin: ``graded`` and ``answer_text`` on option rows from the reader's ``option_logprobs``; open rows go
    to ``graded_open`` / ``answer_open`` (0.0 and "" here: a reader that only chooses between options)."""

    def option_logprobs(self, request: str, bundle: EvidenceBundle, choices: Sequence[str],
                        state: Shown) -> list[float]:
        raise NotImplementedError

    @staticmethod
    def graded_choice(lps: Sequence[float], choices: Sequence[str], reference: str) -> float:
        """Softmax probability of ``reference`` over the options' scores (0 if it is not an option).

        >>> round(OptionScoring.graded_choice([-1.0, -1.0], ["a", "b"], "b"), 2)
        0.5
        """
        ref = choice_index(choices, reference)
        z = max(lps)
        ps = [math.exp(v - z) for v in lps]
        return ps[ref] / sum(ps) if ref is not None else 0.0

    def graded(self, instance: TrainingInstance, state: Shown) -> float:
        """P(reference option) over the options (0..1); ``graded_open`` on a row without options."""
        if not instance.choices:
            return self.graded_open(instance, state)
        lps = self.option_logprobs(instance.request, instance.bundle(), instance.choices, state)
        return self.graded_choice(lps, instance.choices, instance.reference_answer)

    def graded_open(self, instance: TrainingInstance, state: Shown) -> float:
        return 0.0

    def answer_text(self, request: str, bundle: EvidenceBundle, choices: Sequence[str] | None,
                    state: Shown) -> str:
        """The best-scored option; ``answer_open`` on a row without options."""
        if not choices:
            return self.answer_open(request, bundle, state)
        return choices[best_index(self.option_logprobs(request, bundle, choices, state))]

    def answer_open(self, request: str, bundle: EvidenceBundle, state: Shown) -> str:
        return ""


__all__ = ["OptionReader", "OptionScoring", "Shown", "best_index", "choice_index"]
