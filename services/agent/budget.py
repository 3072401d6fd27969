"""A variant's failure (`EngineError`) and the cost guardrails every variant of a
generation shares (`CostBudget`), checked before each tool call and refinement round."""

from __future__ import annotations

from services.agent.providers.base import ProviderSession


class EngineError(Exception):
    """A variant failure with a message for the user."""


class CostBudget:
    """The cost guardrails, checked before every tool call; shared by a generation's
    engines. As in the seed, `limit_usd` bounds each variant's own session, so one
    expensive variant stops only itself; `total_limit_usd` (off by default) bounds
    the sum over the generation's variants and stops whichever variant checks next."""

    def __init__(self, limit_usd: float | None, total_limit_usd: float | None = None) -> None:
        self.limit_usd = limit_usd
        self.total_limit_usd = total_limit_usd
        self._sessions: list[ProviderSession] = []

    def track(self, session: ProviderSession) -> None:
        self._sessions.append(session)

    def spent_usd(self) -> float:
        return sum(s.total_cost_usd() for s in self._sessions)

    def affordable(self, session: ProviderSession) -> bool:
        """Whether `session` may go on: what `check` would not stop."""
        try:
            self.check(session)
        except EngineError:
            return False
        return True

    def check(self, session: ProviderSession) -> None:
        # Each sum only when its limit is set: this runs before every tool call.
        if self.limit_usd is not None:
            _refuse_over(
                session.total_cost_usd(),
                self.limit_usd,
                "this variant has cost {}",
                "per variant (GENERATION_MAX_COST_USD)",
            )
        if self.total_limit_usd is not None:
            _refuse_over(
                self.spent_usd(),
                self.total_limit_usd,
                "this generation's variants have cost {} together",
                "(S2C_GENERATION_MAX_TOTAL_COST_USD)",
            )


def _refuse_over(spent: float, limit: float, spending: str, setting: str) -> None:
    """An EngineError when `spent` is over `limit`: `spending` says whose cost (`{}` is the
    amount) and `setting` which budget."""
    if spent > limit:
        raise EngineError(
            f"Stopped: {spending.format(f'${spent:.4f}')}, over the budget of "
            f"${limit:.4f} {setting}."
        )
