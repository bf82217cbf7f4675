"""The market measures, each on a market whose answer is worked out by hand."""

from __future__ import annotations

from decimal import Decimal

from dealroom.analysis.market import format_market, market_measures
from dealroom.protocol import Accept, MakeOffer, SendMessage
from dealroom.protocol.generator import scenario_at
from dealroom.protocol.market import Addressed, MarketRules, MarketScenario
from dealroom.protocol.market_referee import MarketRecord, MarketReferee

BASE = scenario_at(0, 0, "mid").model_copy(
    update={"list_price": Decimal(1000), "seller_cost": Decimal(500), "buyer_value": Decimal(600)}
)
MARKET = MarketScenario(base=BASE, buyer_values=(Decimal(600), Decimal(900), Decimal(750)))


def record(referee: MarketReferee) -> MarketRecord:
    assert referee.outcome is not None
    return MarketRecord(
        scenario=MARKET,
        seller="s",
        buyers=("x", "y", "z"),
        log=tuple(referee.log),
        outcome=referee.outcome,
    )


def test_a_seller_fixed_on_the_top_bidder_that_sells_below_another_standing_bid() -> None:
    market = MarketReferee(MARKET, MarketRules())
    market.apply_seller(Addressed("b1", MakeOffer(price=Decimal(950))), 1.0)  # probe b1
    market.apply_seller(Addressed("b2", MakeOffer(price=Decimal(950))), 2.0)  # probe b2
    market.apply_buyer("b1", MakeOffer(price=Decimal(580)), 3.0)
    market.apply_seller(Addressed("b1", MakeOffer(price=Decimal(900))), 4.0)  # concedes: on top
    market.apply_buyer("b2", MakeOffer(price=Decimal(700)), 5.0)
    market.apply_seller(Addressed("b2", SendMessage(text="more?")), 6.0)  # b2 is on top
    market.apply_seller(Addressed("b1", MakeOffer(price=Decimal(650))), 7.0)  # not on top
    market.apply_buyer("b1", Accept(offer_id="o4"), 8.0)  # sells at 650, b2 stood at 700
    measures = market_measures(record(market))
    assert measures.probed == 2  # b1 and b2 before the first price below 950
    assert measures.offers_per_buyer == 1.333333  # 4 offers, 3 buyers
    assert measures.fixation == 0.666667  # of 3 actions with a bid standing, 2 to the top bidder
    assert measures.unheard_at_sale == 1  # b3 never bid
    assert measures.early_sale_loss == 0.125  # (700 - 650) / (900 - 500)
    assert "early-sale loss 0.125" in format_market(record(market))


def test_without_a_sale_the_sale_measures_are_null() -> None:
    market = MarketReferee(MARKET, MarketRules())
    market.apply_seller(Addressed("b3", MakeOffer(price=Decimal(950))), 1.0)
    market.expire(BASE.deadline)
    measures = market_measures(record(market))
    assert (measures.probed, measures.fixation) == (1, None)
    assert (measures.unheard_at_sale, measures.early_sale_loss) == (None, None)
