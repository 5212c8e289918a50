"""What a strategy may declare beyond ``name`` and ``plan``, read in one place with one default
each (docs/window.md#the-strategy-protocol).

A custom strategy need not declare ``reads_usage`` or ``billing``; every reader of them goes
through ``traits_of``, so the definition checks and the window stage cannot give an undeclared
attribute two different meanings.
"""

from __future__ import annotations

import msgspec

from afp_runtime.window.visit import Billing


class StrategyTraits(msgspec.Struct, frozen=True, kw_only=True):
    """A strategy's optional declarations.

    Attributes:
        reads_usage: whether it reads measured token usage; True when undeclared (a custom
            strategy may), so the stale-usage warning concerns it.
        billing: its ``billing``: a ``Billing``, None (it makes no model call of its own), or
            UNSET when it declares none.
    """

    reads_usage: bool = True
    billing: Billing | msgspec.UnsetType | None = msgspec.UNSET

    @property
    def may_call_model(self) -> bool:
        """Whether a visit may call a model: unless it declares ``billing = None``; a strategy
        that declares nothing is not known to make no call."""
        return self.billing is not None

    @property
    def billed_provider(self) -> str:
        """The provider name its spends are billed to: the billing port's ``provider``, else
        ``unknown``."""
        billing = self.billing
        if not isinstance(billing, Billing):
            return "unknown"
        provider = getattr(billing.provider, "provider", None)
        return provider if isinstance(provider, str) else "unknown"


def traits_of(strategy: object) -> StrategyTraits:
    """The optional declarations of ``strategy``, defaults filled in. ``billing`` is passed on
    as found: ``validate_strategy`` refuses one that is not a ``Billing`` or None."""
    return StrategyTraits(
        reads_usage=bool(getattr(strategy, "reads_usage", True)),
        billing=getattr(strategy, "billing", msgspec.UNSET),
    )
