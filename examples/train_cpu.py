"""Train a small bargaining policy on a CPU, against boulware, with numpy only.

The learner is the buyer in ``dealroom/Bargain-v0`` (observations and actions: see
:mod:`dealroom.training.spaces`) facing the boulware seller, and it responds to every move of the
seller (``wait=None``). Its policy has four parameters, tuned by the cross-entropy method (CEM):

- ``p``, ``h``: a model of the opponent. The policy assumes the seller concedes as
  ``ask(t) = O - (O - c) t**p`` from its opening ``O`` to its unknown cost ``c``, and that the
  ask it sees was set ``h`` (a fraction of the deadline) before now. One observed ask then
  gives an estimate of the cost: ``c_hat = O - (O - ask) / (t - h)**p``.
- ``mu``: how far above ``c_hat`` to bid: ``bid = c_hat + mu (O - c_hat)``, never above the
  buyer's own value. Early on ``c_hat`` is far below anything the seller takes, so bids start
  low and rise as the seller reveals itself.
- ``t_accept``: after this fraction of the deadline, take any offer that does not lose money.

It accepts an offer at or below its own bid. CEM starts from an uninformed prior (p = 1: a
linearly conceding opponent) and learns the opponent's curve from rewards alone. Every
registered scripted agent plays the same seller on the same held-out scenarios for comparison.

Run: ``python examples/train_cpu.py`` (about 1-3 minutes). Writes ``out/train_cpu.png`` when
matplotlib is installed, else ``out/train_cpu.svg``; exits 1 if the learned policy does not
beat every scripted agent.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from dealroom.agents import entries, resolve
from dealroom.engine.match import play
from dealroom.protocol import Scenario
from dealroom.protocol.generator import scenario_at
from dealroom.training import BargainEnv
from dealroom.training.spaces import ACCEPT, OFFER, action

OPPONENT = "boulware"
Policy = Callable[[np.ndarray], np.ndarray]


def params(theta: np.ndarray) -> dict[str, float]:
    """Unconstrained CEM coordinates -> policy parameters."""

    def sigmoid(x: float) -> float:
        return float(1 / (1 + np.exp(-x)))

    return {
        "p": float(np.exp(theta[0])),
        "h": 0.1 * sigmoid(theta[1]),
        "mu": 0.5 * sigmoid(theta[2]),
        "t_accept": 0.8 + 0.2 * sigmoid(theta[3]),
    }


def policy(theta: np.ndarray) -> Policy:
    """The buyer's policy for one parameter vector (layout: dealroom.training.spaces)."""
    k = params(theta)

    def act(obs: np.ndarray) -> np.ndarray:
        value, t = float(obs[1]), float(obs[2])
        has_ask, ask, opening = bool(obs[3]), float(obs[4]), float(obs[7])
        bid = 0.3 * value
        if has_ask and opening > ask and t > k["h"]:
            cost = opening - (opening - ask) / (t - k["h"]) ** k["p"]
            bid = min(value, max(bid, cost + k["mu"] * (opening - cost)))
        if has_ask and (ask <= bid or (t >= k["t_accept"] and ask <= value)):
            return action(ACCEPT)
        return action(OFFER, bid)

    return act


def episode_share(env: BargainEnv, act: Policy, scenario: Scenario) -> tuple[float, bool]:
    """The buyer's surplus share (0 without a deal) and whether a deal was made."""
    obs, _ = env.reset(seed=0, options={"scenario": scenario})
    done, info = False, {}
    while not done:
        obs, _, done, _, info = env.step(act(obs))
    outcome = info["outcome"]
    return (outcome.buyer_share or 0.0), outcome.status == "deal"


def evaluate(env: BargainEnv, act: Policy, scenarios: Sequence[Scenario]) -> tuple[float, float]:
    """Mean share and deal rate."""
    results = [episode_share(env, act, s) for s in scenarios]
    return float(np.mean([r[0] for r in results])), float(np.mean([r[1] for r in results]))


def scripted_baselines(scenarios: Sequence[Scenario]) -> dict[str, tuple[float, float]]:
    """Every registered scripted agent as the buyer against the same seller."""
    seller = resolve(OPPONENT)
    table = {}
    for entry in entries():
        if "llm" in entry.name:  # needs a model endpoint; not a scripted baseline
            continue
        buyer = resolve(entry.name)
        records = [play(s, buyer, seller, names=(entry.name, OPPONENT)) for s in scenarios]
        shares = [r.outcome.buyer_share or 0.0 for r in records]
        deals = [r.outcome.status == "deal" for r in records]
        table[entry.name] = (float(np.mean(shares)), float(np.mean(deals)))
    return table


def cem(
    env: BargainEnv,
    train: Sequence[Scenario],
    valid: Sequence[Scenario],
    *,
    generations: int,
    population: int,
    batch: int,
    elite: int,
    seed: int,
) -> tuple[np.ndarray, list[float]]:
    """Cross-entropy method; returns the best mean (by validation share) and the curve."""
    rng = np.random.default_rng(seed)
    mean, std = np.zeros(4), np.full(4, 1.0)
    best, best_share = mean.copy(), evaluate(env, policy(mean), valid)[0]
    curve = [best_share]
    print(f"generation  0: validation share {best_share:.3f} (prior)", flush=True)
    for generation in range(1, generations + 1):
        episodes = [train[i] for i in rng.choice(len(train), batch, replace=False)]
        candidates = mean + std * rng.standard_normal((population, 4))
        fitness = [evaluate(env, policy(c), episodes)[0] for c in candidates]
        elites = candidates[np.argsort(fitness)[-elite:]]
        mean, std = elites.mean(axis=0), elites.std(axis=0) + 0.05
        share = evaluate(env, policy(mean), valid)[0]
        curve.append(share)
        if share > best_share:
            best, best_share = mean.copy(), share
        shown = ", ".join(f"{k}={v:.3f}" for k, v in params(mean).items())
        print(f"generation {generation:2d}: validation share {share:.3f}  ({shown})", flush=True)
    return best, curve


def write_plot(curve: list[float], baseline: tuple[str, float], out: Path) -> Path:
    """Learning curve with the best scripted agent's share; PNG via matplotlib, else SVG."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return _write_svg(curve, baseline, out.with_suffix(".svg"))
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(range(len(curve)), curve, marker="o", label="CEM policy (validation)")
    ax.axhline(baseline[1], color="grey", linestyle="--", label=f"best scripted: {baseline[0]}")
    ax.set(xlabel="generation", ylabel="buyer surplus share", title=f"Buyer vs {OPPONENT}")
    ax.legend(loc="lower right")
    fig.tight_layout()
    path = out.with_suffix(".png")
    fig.savefig(path, dpi=120)
    return path


def _write_svg(curve: list[float], baseline: tuple[str, float], path: Path) -> Path:
    width, height, pad = 560, 320, 50
    top = max([*curve, baseline[1], 0.1]) * 1.15

    def x(i: int) -> float:
        return pad + (width - 2 * pad) * i / max(len(curve) - 1, 1)

    def y(v: float) -> float:
        return height - pad - (height - 2 * pad) * v / top

    points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(curve))
    ticks = "".join(
        f'<text x="{pad - 8}" y="{y(v) + 4:.1f}" text-anchor="end" font-size="11">{v:.1f}</text>'
        f'<line x1="{pad}" x2="{width - pad}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#eee"/>'
        for v in np.arange(0, top, 0.1)
    )
    dots = "".join(f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="3"/>' for i, v in enumerate(curve))
    svg = f"""<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" \
font-family="sans-serif">
<rect width="100%" height="100%" fill="white"/>
<text x="{width / 2}" y="24" text-anchor="middle" font-size="14">Buyer vs {OPPONENT}: \
surplus share by CEM generation</text>
{ticks}
<line x1="{pad}" x2="{width - pad}" y1="{y(0):.1f}" y2="{y(0):.1f}" stroke="black"/>
<line x1="{pad}" x2="{pad}" y1="{pad}" y2="{y(0):.1f}" stroke="black"/>
<line x1="{pad}" x2="{width - pad}" y1="{y(baseline[1]):.1f}" y2="{y(baseline[1]):.1f}" \
stroke="grey" stroke-dasharray="6,4"/>
<text x="{width - pad}" y="{y(baseline[1]) - 6:.1f}" text-anchor="end" font-size="11" \
fill="grey">best scripted ({baseline[0]}) {baseline[1]:.3f}</text>
<polyline points="{points}" fill="none" stroke="#1f77b4" stroke-width="2"/>
<g fill="#1f77b4">{dots}</g>
<text x="{width / 2}" y="{height - 12}" text-anchor="middle" font-size="12">generation \
(validation share of the CEM mean)</text>
</svg>
"""
    path.write_text(svg, encoding="utf-8")
    return path


def held_out() -> list[Scenario]:
    """The 200 scenarios every policy is compared on (never trained or validated on)."""
    return [scenario_at(3, i, "mid") for i in range(200)]


def row(agent: str, share: float, deals: float) -> str:
    """One line of the comparison table (the README shows the table as printed)."""
    return f"  {agent:<14} {share:6.3f} {deals:6.2f}"


def main(argv: Sequence[str] | None = None) -> int:
    """Train, compare, plot, print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--generations", type=int, default=16)
    parser.add_argument("--population", type=int, default=20)
    parser.add_argument("--batch", type=int, default=32, help="training scenarios per candidate")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("out/train_cpu"), help="plot (no suffix)")
    args = parser.parse_args(argv)
    started = time.perf_counter()

    train = [scenario_at(1, i, "mid") for i in range(400)]
    valid = [scenario_at(2, i, "mid") for i in range(64)]
    test = held_out()
    env = BargainEnv(role="buyer", opponent=OPPONENT, wait=None)

    theta, curve = cem(
        env,
        train,
        valid,
        generations=args.generations,
        population=args.population,
        batch=args.batch,
        elite=5,
        seed=args.seed,
    )
    learned = evaluate(env, policy(theta), test)
    prior = evaluate(env, policy(np.zeros(4)), test)
    baselines = scripted_baselines(test)
    best_name, (best_share, _) = max(baselines.items(), key=lambda kv: kv[1][0])

    print(f"\nBuyer vs {OPPONENT}, {len(test)} held-out mid-tier scenarios:")
    print(f"  {'agent':<14} {'share':>6} {'deals':>6}")
    for name, (share, deals) in sorted(baselines.items(), key=lambda kv: -kv[1][0]):
        print(row(name, share, deals))
    print(row("CEM prior", *prior))
    print(row("CEM learned", *learned))
    print("  learned parameters: " + ", ".join(f"{k}={v:.3f}" for k, v in params(theta).items()))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    plot = write_plot(curve, (best_name, best_share), args.out)
    print(f"\nLearning curve: {plot}. Time: {time.perf_counter() - started:.0f} s.")
    beats = learned[0] > best_share
    verdict = "above" if beats else "NOT above"
    print(f"Learned share {learned[0]:.3f} is {verdict} the best scripted agent ({best_name}).")
    return 0 if beats else 1


if __name__ == "__main__":
    sys.exit(main())
