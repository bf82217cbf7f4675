"""The report of a market tournament: per seller and per pool of buyers, with intervals.

Per seller: sale rate; the seller's share of the best price (its surplus / the market's gains,
on sales with gains); efficiency (realised gains / the most gains, over markets with gains);
the share of sales to a buyer with the highest value; and the means of the market measures
(``dealroom.analysis.market``). Per pool of buyers: the buyers' share (the winning buyer's
surplus / the market's gains, 0 without a sale, over markets with gains) and the sale rate.
Every rate and share has a 95% percentile bootstrap interval over markets
(``analysis.metrics.ratio_estimate``, seeded per figure). Model sellers are ranked in the same
table as scripted ones; what every model seat stored beside its market (``markets.extra`` by
seat: ``{"seller": ...}`` from a tournament, the seller's and each model buyer's from ``dealroom
match --buyers N --results``: model calls, tokens, cost, turn-limit ends, errors) is summed per
model and role below it, with the model calls paid for in plays that no stored market kept
(a run killed mid-market, from the paid-call journal ``<store>.paid.jsonl``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, cast

from pydantic import Field

from dealroom.analysis.market import MarketMeasures, market_measures
from dealroom.analysis.metrics import Estimate, ratio_estimate
from dealroom.analysis.usage import Unstored
from dealroom.engine.market_turns import SELLER
from dealroom.protocol import Role
from dealroom.protocol._base import Model
from dealroom.protocol.market import pool_name
from dealroom.protocol.market_referee import MarketRecord
from dealroom.store import paid as paid_calls
from dealroom.store.results import ResultsStore


class Figure(Model):
    """A figure with its interval and the markets behind it."""

    value: float | None
    low: float | None
    high: float | None
    n: int

    @classmethod
    def of(cls, estimate: Estimate) -> Figure:
        """From an ``Estimate``."""
        return cls(value=estimate.value, low=estimate.low, high=estimate.high, n=estimate.n)


class SellerRow(Model):
    """One seller over every pool and tier of the run."""

    seller: str
    markets: int
    sale_rate: Figure
    seller_share: Figure
    efficiency: Figure
    to_highest_value: Figure
    probed: float
    offers_per_buyer: float
    fixation: float | None
    early_sale_loss: float | None


class PoolRow(Model):
    """One pool of buyers over every seller and tier of the run."""

    pool: str
    markets: int
    sale_rate: Figure
    buyer_share: Figure


class ModelSeatRow(Model):
    """A model's usage in one role over the run's markets, summed from what its seats
    stored."""

    model: str
    """The seat's agent: the seller's name, or a buyer's spec."""
    role: Role
    seats: int
    """Seats it played in this role (a market with two of its buyers counts two)."""
    model_calls: int
    failed_attempts: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    """None unless every one of its seats has a cost (its roster entry has prices)."""
    turn_limit_hits: int
    invalid_tool_calls: int
    refused_tool_calls: int
    errors: int
    """Seats whose model failed for good (the seller walked away from the market, a buyer
    from its thread; the error is stored)."""


class MarketReport(Model):
    """A market run's report."""

    run: str
    markets: int
    buyers: list[int]
    """The numbers of buyers of the run's markets."""
    sellers: list[SellerRow]
    pools: list[PoolRow]
    models: list[ModelSeatRow] = Field(default_factory=list[ModelSeatRow])
    """Model seats' usage by model and role (empty for a run of scripted seats)."""
    unstored: Unstored = Field(default_factory=Unstored)
    """Model calls paid for in plays of markets that no stored market kept."""


def _mean(values: Iterable[float | int | None]) -> float | None:
    defined = [float(v) for v in values if v is not None]
    return round(sum(defined) / len(defined), 6) if defined else None


def _gains(record: MarketRecord) -> float:
    return float(record.outcome.gains)


def _figure(pairs: list[tuple[float, float]], label: str, resamples: int, seed: int) -> Figure:
    return Figure.of(ratio_estimate(pairs, label=label, resamples=resamples, seed=seed))


def _sale_rate(with_gains: list[MarketRecord], label: str, resamples: int, seed: int) -> Figure:
    """Markets with gains that sold, of markets with gains: per seller and per pool alike."""
    pairs = [(float(r.outcome.status == "deal"), 1.0) for r in with_gains]
    return _figure(pairs, f"{label}:sale_rate", resamples, seed)


def _seller_row(name: str, records: list[MarketRecord], resamples: int, seed: int) -> SellerRow:
    measures: list[MarketMeasures] = [market_measures(r) for r in records]
    with_gains = [r for r in records if r.outcome.gains > 0]
    sales = [r for r in with_gains if r.outcome.price is not None]
    label = f"market-seller:{name}"
    return SellerRow(
        seller=name,
        markets=len(records),
        sale_rate=_sale_rate(with_gains, label, resamples, seed),
        seller_share=_figure(
            [(r.outcome.seller_share or 0.0, 1.0) for r in sales],
            f"{label}:seller_share", resamples, seed,
        ),
        efficiency=_figure(
            [((r.outcome.efficiency or 0.0) * _gains(r), _gains(r)) for r in with_gains],
            f"{label}:efficiency", resamples, seed,
        ),
        to_highest_value=_figure(
            [(float(bool(r.outcome.allocative)), 1.0) for r in sales],
            f"{label}:allocative", resamples, seed,
        ),
        probed=_mean(m.probed for m in measures) or 0.0,
        offers_per_buyer=_mean(m.offers_per_buyer for m in measures) or 0.0,
        fixation=_mean(m.fixation for m in measures),
        early_sale_loss=_mean(m.early_sale_loss for m in measures),
    )  # fmt: skip


def _pool_row(name: str, records: list[MarketRecord], resamples: int, seed: int) -> PoolRow:
    with_gains = [r for r in records if r.outcome.gains > 0]
    label = f"market-pool:{name}"
    return PoolRow(
        pool=name,
        markets=len(records),
        sale_rate=_sale_rate(with_gains, label, resamples, seed),
        buyer_share=_figure(
            [(float(r.outcome.buyer_surplus / r.outcome.gains), 1.0) for r in with_gains],
            f"{label}:buyer_share", resamples, seed,
        ),
    )  # fmt: skip


def _count(data: Mapping[str, Any], key: str) -> int:
    value = data.get(key, 0)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def model_seats(
    record: MarketRecord, extra: Mapping[str, Any]
) -> list[tuple[str, Role, Mapping[str, Any]]]:
    """The model seats of one stored market: (agent, role, what its seat stored), the seller
    first, then the buyers in order. ``extra`` holds them by seat (``seller``, ``b1`` ..);
    its other entries (the attempt, the secret) are no seats, nor is a scripted seat."""
    named: list[tuple[str, Role, str]] = [(record.seller, "seller", SELLER)]
    for spec, seat in zip(record.buyers, record.scenario.buyers, strict=True):
        named.append((spec, "buyer", seat))
    return [
        (agent, role, cast(Mapping[str, Any], data))
        for agent, role, seat in named
        if isinstance(data := extra.get(seat), Mapping)
    ]


def _model_row(name: str, role: Role, seats: list[Mapping[str, Any]]) -> ModelSeatRow:
    costs = [seat.get("cost_usd") for seat in seats]
    priced = all(isinstance(c, int | float) and not isinstance(c, bool) for c in costs)
    return ModelSeatRow(
        model=name,
        role=role,
        seats=len(seats),
        **{
            key: sum(_count(seat, key) for seat in seats)
            for key in (
                "model_calls", "failed_attempts", "input_tokens", "output_tokens",
                "turn_limit_hits", "invalid_tool_calls", "refused_tool_calls",
            )
        },
        cost_usd=round(sum(float(c) for c in costs if c is not None), 8) if priced else None,
        errors=sum("error" in seat for seat in seats),
    )  # fmt: skip


def build_market_report(
    records: Iterable[MarketRecord],
    *,
    run: str,
    seats: Iterable[tuple[str, Role, Mapping[str, Any]]] = (),
    unstored: Unstored | None = None,
    resamples: int = 1000,
    seed: int = 0,
) -> MarketReport:
    """The report of one market run; ``seats``: each model seat's agent, role and what it
    stored beside one market (``model_seats``); ``unstored``: calls paid for in plays no
    stored market kept."""
    by_seller: dict[str, list[MarketRecord]] = {}
    by_pool: dict[str, list[MarketRecord]] = {}
    sizes: set[int] = set()
    count = 0
    for record in records:
        count += 1
        sizes.add(len(record.buyers))
        by_seller.setdefault(record.seller, []).append(record)
        by_pool.setdefault(pool_name(record.buyers), []).append(record)
    sellers = [_seller_row(n, rs, resamples, seed) for n, rs in by_seller.items()]
    sellers.sort(key=lambda row: -(row.seller_share.value or 0.0))
    by_model: dict[tuple[str, Role], list[Mapping[str, Any]]] = {}
    for name, role, data in seats:
        by_model.setdefault((name, role), []).append(data)
    return MarketReport(
        run=run,
        markets=count,
        buyers=sorted(sizes),
        sellers=sellers,
        pools=[_pool_row(n, rs, resamples, seed) for n, rs in by_pool.items()],
        models=[_model_row(*model, data) for model, data in sorted(by_model.items())],
        unstored=unstored or Unstored(),
    )


def stored_market_report(
    store: ResultsStore, run: str, *, resamples: int = 1000, seed: int = 0
) -> MarketReport:
    """The report of a market run as a store holds it, its model seats' usage included, and
    the calls its journal (``<store>.paid.jsonl``) holds of plays no stored market kept."""
    extras = store.market_extras(run)
    records: list[MarketRecord] = []
    seats: list[tuple[str, Role, Mapping[str, Any]]] = []
    for key, record in store.iter_markets(run):
        records.append(record)
        seats += model_seats(record, extras.get(key, {}))
    kept = [a for extra in extras.values() if isinstance(a := extra.get("attempt"), str)]
    unstored = Unstored.of(paid_calls.read(paid_calls.paid_path(store.path), run), kept)
    return build_market_report(
        records, run=run, seats=seats, unstored=unstored, resamples=resamples, seed=seed
    )


def _cell(figure: Figure) -> str:
    if figure.value is None:
        return f"{'n/a':<19}"
    if figure.low is None or figure.high is None:
        return f"{figure.value:.3f}{'':<14}"
    return f"{figure.value:.3f} [{figure.low:.3f}, {figure.high:.3f}]"


def _opt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def format_market_report(report: MarketReport) -> str:
    """The report as text."""
    sizes = ", ".join(str(n) for n in report.buyers)
    lines = [
        f"Market run {report.run!r}: {report.markets:,} markets of {sizes} buyers "
        "(95% bootstrap intervals over markets)",
        "",
        "Sellers, best seller share first",
        f"  {'seller':<16} {'n':>5}  {'sale rate':<21}  {'seller share':<21}  "
        f"{'efficiency':<21}  {'to highest value':<21}  probed  offers/buyer  fixation  "
        "early-sale loss",
    ]
    for row in report.sellers:
        lines.append(
            f"  {row.seller:<16} {row.markets:>5}  {_cell(row.sale_rate):<21}  "
            f"{_cell(row.seller_share):<21}  {_cell(row.efficiency):<21}  "
            f"{_cell(row.to_highest_value):<21}  {row.probed:>6.2f}  {row.offers_per_buyer:>12.2f}"
            f"  {_opt(row.fixation):>8}  {_opt(row.early_sale_loss):>15}"
        )
    lines += [
        "",
        "Buyer pools",
        f"  {'pool':<28} {'n':>5}  {'sale rate':<21}  buyers' share",
    ]
    for pool in report.pools:
        lines.append(
            f"  {pool.pool:<28} {pool.markets:>5}  {_cell(pool.sale_rate):<21}  "
            f"{_cell(pool.buyer_share)}"
        )
    if report.models:
        lines += ["", "Model seats", _MODEL_HEADER]
        lines += [_model_line(row) for row in report.models]
    if report.unstored.calls:
        lines += ["", f"Run: {report.unstored.text()}"]
    return "\n".join(lines)


_MODEL_HEADER = (
    f"  {'model':<16} {'role':<6} {'n':>5}  {'calls':>6}  {'failed':>6}  {'tokens in':>10}  "
    f"{'tokens out':>10}  {'cost USD':>10}  turn limit  invalid  refused  errors"
)


def _model_line(row: ModelSeatRow) -> str:
    cost = "n/a" if row.cost_usd is None else f"{row.cost_usd:.4f}"
    return (
        f"  {row.model:<16} {row.role:<6} {row.seats:>5}  {row.model_calls:>6}  "
        f"{row.failed_attempts:>6}  "
        f"{row.input_tokens:>10,}  {row.output_tokens:>10,}  {cost:>10}  "
        f"{row.turn_limit_hits:>10}  {row.invalid_tool_calls:>7}  {row.refused_tool_calls:>7}  "
        f"{row.errors:>6}"
    )
