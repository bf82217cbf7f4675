"""The Inspect AI task ``dealroom/bargain``: the evaluated model plays the one model seat.

    pip install 'dealroom[inspect]'
    inspect eval dealroom/bargain --model openai/gpt-4.1-mini \\
        -T role=buyer -T opponent=boulware -T tiers=low,mid,high -T n=30

A sample is one negotiation: the scenario ``index`` of a tier under the task's secret (the
tournament's job, so ``dealroom tournament --learner`` plays the same scenarios), against one
opponent. The model plays through ``InspectSeatModel``: the briefing, tools, result texts and
turn rule of every other surface (docs/design.md, section 10), each model call Inspect's own
``generate``. The opponent is any dealroom agent spec, or ``model``: the model bound by
``--model-role opponent=PROVIDER/MODEL``, playing the same seat. The scorer scores the
negotiation as dealroom does; the task's metrics are ``dealroom report``'s measures for the
evaluated model's seat (computed by ``build_report`` itself), with standard errors. With
``-T out=FILE.db`` every negotiation is also written to a results store, so ``dealroom report
FILE.db`` ranks it beside tournaments. docs/harnesses.md has the details.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import anyio
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import Model, get_model
from inspect_ai.scorer import Score, Scorer, Target, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver

from dealroom.agents._llm_model import LLMError
from dealroom.agents.lineup import lineup, llm_settings
from dealroom.agents.llm import LLMPlayer
from dealroom.harnesses._inspect_model import InspectSeatModel
from dealroom.harnesses._inspect_scores import (
    RECORD_KEY,
    SeatScore,
    negotiation_measures,
    negotiation_stderr,
)
from dealroom.play.jobs import ChunkPlayer, Job, Played
from dealroom.play.players import Player, close_players
from dealroom.play.registry import split_specs
from dealroom.play.settings import PlaySettings, SeatSettings
from dealroom.play.tournament import Tournament, TournamentConfig
from dealroom.protocol import DEFAULT_RULES, TIERS, Role, Tier, seat_view
from dealroom.protocol.briefing import briefing
from dealroom.protocol.model_seat import MAX_TOOL_ROUNDS
from dealroom.protocol.secret import Secret, SecretError, Seed
from dealroom.store.results import ResultsStore

MODEL_OPPONENT = "model"
"""The opponent spec that names the model bound to Inspect's ``opponent`` role."""
OPPONENT_ROLE = "opponent"
EVALUATED = "model-under-evaluation"
"""The evaluated model's place in the task's ``PlaySettings`` (its records carry its name)."""


@task
def bargain(
    role: str = "buyer",
    opponent: str | list[str] = "boulware",
    tiers: str | list[str] = "low,mid,high",
    n: int = 10,
    secret: str | None = None,
    seed: int | None = None,
    max_tool_rounds: int = MAX_TOOL_ROUNDS,
    out: str | None = None,
    run: str = "inspect",
) -> Task:
    """One negotiation per sample: ``n`` scenarios per tier and opponent, the model in ``role``.

    Args:
        role: The evaluated model's seat, ``buyer`` or ``seller``.
        opponent: Comma-separated dealroom agent specs (``boulware``, ``linear:k=0.1``,
            ``llm:MODEL``), or ``model`` for the model of ``--model-role opponent=...``.
        tiers: Comma-separated price tiers (``low``, ``mid``, ``high``).
        n: Scenarios per tier (and opponent).
        secret: The hex secret scenarios and house agents draw under (at least 32 digits);
            none: a fresh one, recorded in the log's task metadata.
        seed: A public integer seed instead of a secret (published scenario sets).
        max_tool_rounds: Model replies whose tool calls are made, per negotiation.
        out: Also write every negotiation to this results store (``dealroom report``).
        run: The run's name in that store.
    """
    play = task_settings(role, opponent, tiers, n, secret, seed, max_tool_rounds)
    seed_used = cast(Seed, play.secret)
    shown = {"secret": seed_used.hex()} if isinstance(seed_used, Secret) else {"seed": seed_used}
    sink = _Sink(Path(out), run) if out else None
    return Task(
        dataset=samples(play),
        solver=negotiate(play, sink, run),
        scorer=negotiation_outcome(),
        metadata={**shown, "role": play.learner_role, "tiers": list(play.tiers), "n": n},
    )


def task_settings(
    role: str,
    opponent: str | list[str],
    tiers: str | list[str],
    n: int,
    secret: str | None,
    seed: int | None,
    max_tool_rounds: int,
) -> PlaySettings:
    """The task's parameters as ``PlaySettings`` (a ValueError of one sentence otherwise)."""
    if role not in ("buyer", "seller"):
        raise ValueError(f"role must be buyer or seller, not {role!r}")
    opponents = _listed(opponent)
    if not opponents or len(set(opponents)) != len(opponents):
        raise ValueError("give at least one opponent, each once")
    chosen_tiers = _listed(tiers)
    if not chosen_tiers or any(t not in TIERS for t in chosen_tiers):
        raise ValueError(f"tiers must be some of {', '.join(TIERS)}, not {tiers!r}")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"n must be a positive integer, not {n!r}")
    if max_tool_rounds < 1:
        raise ValueError("max_tool_rounds must be at least 1")
    play = PlaySettings(
        agents=(EVALUATED, *opponents),
        tiers=tuple(cast(list[Tier], chosen_tiers)),
        per_pair=n,
        secret=_seed(secret, seed),
        learner=EVALUATED,
        learner_role=role,
        seats=SeatSettings(max_tool_rounds=max_tool_rounds),
    )
    scripted = [spec for spec in opponents if spec != MODEL_OPPONENT]
    if scripted:  # every spec resolves before a sample starts (no endpoint is probed)
        lineup(replace(play, agents=tuple(scripted), learner=None), probe=False)
    return play


def _listed(value: str | list[str]) -> list[str]:
    if isinstance(value, str):
        return split_specs(value)
    return [str(item).strip() for item in value if str(item).strip()]


def _seed(secret: str | None, seed: int | None) -> Seed:
    if secret is not None and seed is not None:
        raise ValueError("give a secret or a seed, not both")
    if seed is not None:
        return int(seed)
    if secret is None:
        return Secret.new()
    if not isinstance(secret, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError("the secret is a hex string: quote it (-T secret='\"...\"')")
    try:
        return Secret.from_hex(secret)
    except SecretError as exc:
        raise ValueError(f"secret: {exc}") from None


def samples(play: PlaySettings) -> list[Sample]:
    """One sample per negotiation the evaluated model plays: scenario-major, as a tournament
    orders its jobs; its input is the model's briefing (no other side's value)."""
    role = cast(Role, play.learner_role)
    config = _config(play, EVALUATED)
    out: list[Sample] = []
    for job in config.jobs():
        opponent = job.seller if role == "buyer" else job.buyer
        scenario = job.scenario()
        out.append(
            Sample(
                id=f"{opponent}/{job.tier}/{job.index:05d}",
                input=briefing(seat_view(scenario, role), DEFAULT_RULES),
                metadata={
                    "opponent": opponent,
                    "tier": job.tier,
                    "index": job.index,
                    "role": role,
                    "scenario_id": scenario.id,
                },
            )
        )
    return out


def _config(
    play: PlaySettings, learner: str, names: dict[str, str] | None = None
) -> TournamentConfig:
    """The tournament that plays the same negotiations (agents renamed by ``names``)."""
    rename = names or {}
    return TournamentConfig(
        agents=tuple(rename.get(a, a) for a in play.agents),
        tiers=play.tiers,
        per_pair=play.per_pair,
        seed=cast(Seed, play.secret),
        learner=learner,
        learner_role=play.learner_role,
    )


def agent_name(model: Model) -> str:
    """A model's name as an agent in records and reports (``provider:model``: agent names in a
    store carry no ``/``)."""
    return str(model).replace("/", ":")


@solver
def negotiate(play: PlaySettings, sink: _Sink | None = None, run: str = "inspect") -> Solver:
    """Play the sample's negotiation: the task's model in its seat, the opponent in the other;
    the sample's messages become the model's whole conversation."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        del generate  # the seat calls the model itself, through Inspect's generate
        role = cast(Role, play.learner_role)
        seat_model = InspectSeatModel(get_model())
        learner = LLMPlayer(seat_model, name=agent_name(seat_model.model), settings=_llm(play))
        opponent = _opponent(play, str(state.metadata["opponent"]), learner.name)
        buyer, seller = (learner, opponent) if role == "buyer" else (opponent, learner)
        job = Job(
            run=run,
            buyer=buyer.name,
            seller=seller.name,
            tier=cast(Tier, state.metadata["tier"]),
            index=int(state.metadata["index"]),
            seed=cast(Seed, play.secret),
        )
        try:
            played = await ChunkPlayer(rules=DEFAULT_RULES).play_seated(
                job, {buyer.name: buyer, seller.name: seller}
            )
        finally:
            await close_players([buyer, seller])
        failed: dict[str, str] = played.extra.get("errors") or {}
        if failed:  # the sample errs (Inspect can retry it), never a no-deal that was not played
            raise LLMError("; ".join(f"the {r} seat failed: {e}" for r, e in failed.items()))
        if sink is not None:
            await sink.save(play, job, played, learner.name, opponent.name)
        if seat_model.conversations:
            chat = seat_model.conversations[-1]
            state.messages = list(chat.inspect_messages)
            if chat.outputs:
                state.output = chat.outputs[-1]
        state.store.set(RECORD_KEY, SeatScore.of(job, played, role).model_dump(mode="json"))
        return state

    return solve


def _llm(play: PlaySettings) -> Any:
    """The seat's settings: Inspect retries and times out model calls itself."""
    settings = llm_settings(play.seats)
    return replace(settings, retry=replace(settings.retry, attempts=1, timeout_s=86_400.0))


def _opponent(play: PlaySettings, spec: str, learner: str) -> Player:
    if spec == MODEL_OPPONENT:
        model = get_model(role=OPPONENT_ROLE)
        name = agent_name(model)
        if name == learner:
            name += "#opponent"
        return LLMPlayer(InspectSeatModel(model), name=name, settings=_llm(play))
    players = lineup(replace(play, agents=(spec,), learner=None), probe=False)
    return players.resolver(spec)


@scorer(metrics=[negotiation_measures(), negotiation_stderr()])
def negotiation_outcome() -> Scorer:
    """The negotiation as dealroom scores it, for the evaluated model's seat: its surplus share
    (0 without a deal; none without gains from trade), the deal, its surplus, offers, invalid
    actions, leakage and IR violation; the record rides in the score's metadata for the
    metrics (``dealroom report``'s own computation)."""

    async def score(state: TaskState, target: Target) -> Score:
        del target
        seat = SeatScore.model_validate(state.store.get(RECORD_KEY))
        return seat.score()

    return score


class _Sink:
    """Writes each negotiation to a results store as its sample ends (one writer: the event
    loop's thread; a resumed task skips nothing, and a stored key is never stored twice)."""

    def __init__(self, path: Path, run: str) -> None:
        self.path, self.run = path, run
        self._tournament: Tournament | None = None
        self._lock = anyio.Lock()

    async def save(
        self, play: PlaySettings, job: Job, played: Played, learner: str, opponent: str
    ) -> None:
        async with self._lock:
            if self._tournament is None:
                names = {EVALUATED: learner, MODEL_OPPONENT: opponent}
                config = _config(play, learner, names)
                store = ResultsStore(self.path)
                self._tournament = Tournament(config, store, run_name=self.run)
                self._tournament.pending(resume=True)
            self._tournament.save(job, played)
