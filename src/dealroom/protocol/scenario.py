"""What is being traded, and what each side privately knows about it."""

from __future__ import annotations

from decimal import Decimal
from typing import Literal

from pydantic import Field

from dealroom.protocol._base import Model, Money, Role, trusted

_MAX_AMOUNT = Decimal(10) ** 12
"""Scenario amounts stay below a trillion: offers of a few times the list price then keep
their cents in a JSON number, and far within Decimal's 28 digits."""

Tier = Literal["low", "mid", "high"]
TIERS: tuple[Tier, Tier, Tier] = ("low", "mid", "high")


class Item(Model):
    """The one item on the table."""

    name: str
    """Short name of the item."""
    category: str
    """Broad category, e.g. electronics, vehicle, real estate."""
    description: str
    """One or two sentences a buyer would read in a listing."""


class PublicScenario(Model):
    """What both seats know: the item, its list price and the deadline."""

    id: str
    """Scenario identifier."""
    item: Item
    list_price: Money = Field(gt=0, lt=_MAX_AMOUNT)
    """The advertised price, a public reference point (not anyone's private value)."""
    tier: Tier
    """Price tier: low ($10-$100), mid ($1,000-$10,000) or high ($100,000-$1,000,000)."""
    currency: str
    """ISO currency code of every price in this negotiation."""
    deadline: float = Field(gt=0, allow_inf_nan=False)
    """Seconds on the negotiation clock after which the negotiation ends without a deal."""


class Scenario(PublicScenario):
    """A full scenario, including both private values. Never shown to a seat as a whole."""

    buyer_value: Money = Field(gt=0, lt=_MAX_AMOUNT)
    """Private to the buyer: the most it would pay."""
    seller_cost: Money = Field(gt=0, lt=_MAX_AMOUNT)
    """Private to the seller: the least it would take."""

    def public(self) -> PublicScenario:
        """The part of the scenario both seats may see."""
        # Every field is already validated: construct without validating again (once per seat
        # per negotiation, on the simulation's hot path).
        return trusted(
            PublicScenario,
            id=self.id,
            item=self.item,
            list_price=self.list_price,
            tier=self.tier,
            currency=self.currency,
            deadline=self.deadline,
        )

    def private_value(self, role: Role) -> Money:
        """The role's own reservation value."""
        return self.buyer_value if role == "buyer" else self.seller_cost

    @property
    def gains(self) -> Money:
        """Gains from trade, buyer_value - seller_cost (negative when no deal is possible)."""
        return self.buyer_value - self.seller_cost

    def scaled(self, factor: int) -> Scenario:
        """The same scenario with every price multiplied by an integer factor (for scale tests)."""
        return self.model_copy(
            update={
                "list_price": self.list_price * factor,
                "buyer_value": self.buyer_value * factor,
                "seller_cost": self.seller_cost * factor,
            }
        )


class SeatView(Model):
    """What one seat knows before the negotiation starts: the public scenario and its own value."""

    role: Role
    """Your seat."""
    scenario: PublicScenario
    private_value: Money
    """Your own reservation value: as buyer the most you would pay, as seller the least you
    would take. The other side does not know it, and you do not know theirs."""


def seat_view(scenario: Scenario, role: Role) -> SeatView:
    """The private view of one seat."""
    return trusted(
        SeatView, role=role, scenario=scenario.public(), private_value=scenario.private_value(role)
    )
