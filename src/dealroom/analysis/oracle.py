"""The oracle's result for one seat: the best surplus any policy could have reached.

For a seat played against a scripted counterpart (deterministic under the run's secret), the
oracle surplus is the best surplus a search over simple policies of that seat reached against
the same counterpart on the same scenario (``dealroom.play.oracle``: the search needs the
engine, which this layer does not import; docs/design.md section 9 defines it). Here are the
result and its key; the measures over them (share of the oracle, oracle gap) are
``dealroom.analysis.diagnostics``'.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from dealroom.protocol import Role
from dealroom.protocol.record import NegotiationRecord

OracleKey = tuple[str, Role, str]
"""(scenario id, the seat's role, the counterpart's spec): what an oracle value depends on. A
tournament plays each scenario in many pairings, so the scenario and role alone do not name
one."""


@dataclass(frozen=True, slots=True)
class OracleResult:
    """The oracle surplus of one seat against one scripted counterpart on one scenario."""

    surplus: Decimal
    """The best surplus the search reached (0: no deal was the best it found)."""
    exact: bool
    """True when it is the best any policy can reach (it equals a proven upper bound);
    false: a lower bound, from ``simulations`` negotiations."""
    simulations: int
    """Negotiations simulated for it (the record's own replay included)."""
    bound: Decimal
    """The upper bound the search compared against: ``v - c``, or a tighter one the
    counterpart's policy proves (0 when no deal can help both)."""
    policy: str
    """The best policy found, in words (e.g. ``anchor(price=4470.13, at=117.999)``)."""

    def as_dict(self) -> dict[str, object]:
        """JSON-ready."""
        return {
            "surplus": float(self.surplus),
            "exact": self.exact,
            "simulations": self.simulations,
            "bound": float(self.bound),
            "policy": self.policy,
        }


def oracle_key(record: NegotiationRecord, role: Role) -> OracleKey:
    """The key of the oracle value of ``role`` in ``record``."""
    counterpart = record.seller if role == "buyer" else record.buyer
    return (record.scenario.id, role, counterpart)
