"""The report of a market tournament: per seller and per pool of buyers, with intervals.

Per seller: sale rate; the seller's share of the best price (its surplus / the market's gains,
on sales with gains); efficiency (realised gains / the most gains, over markets with gains);
the share of sales to a buyer with the highest value; and the means of the market measures
(``dealroom.analysis.market``). Per pool of buyers: the buyers' share (the winning buyer's
surplus / the market's gains, 0 without a sale, over markets with gains) and the sale rate.
Every rate and share has a 95% percentile bootstrap interval over markets
(``analysis.metrics.ratio_estimate``, seeded per figure).
"""

from __future__ import annotations

from collections.abc import Iterable

from dealroom.analysis.market import MarketMeasures, market_measures
from dealroom.analysis.metrics import Estimate, ratio_estimate
from dealroom.protocol._base import Model
from dealroom.protocol.market import pool_name
from dealroom.protocol.market_referee import MarketRecord


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


class MarketReport(Model):
    """A market run's report."""

    run: str
    markets: int
    buyers: list[int]
    """The numbers of buyers of the run's markets."""
    sellers: list[SellerRow]
    pools: list[PoolRow]


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


def build_market_report(
    records: Iterable[MarketRecord], *, run: str, resamples: int = 1000, seed: int = 0
) -> MarketReport:
    """The report of one market run."""
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
    return MarketReport(
        run=run,
        markets=count,
        buyers=sorted(sizes),
        sellers=sellers,
        pools=[_pool_row(n, rs, resamples, seed) for n, rs in by_pool.items()],
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
    return "\n".join(lines)
