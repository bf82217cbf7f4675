"""The tournament runner: jobs, common scenarios, backends that agree, resume without loss."""

from __future__ import annotations

import importlib.util
import threading
from collections import Counter
from pathlib import Path

import anyio
import pytest

from dealroom.agents import resolve
from dealroom.engine.fork import ForkError, fork, rebuild
from dealroom.play.backends import ProcessBackend, RayBackend, SerialBackend, _context, chunked
from dealroom.play.jobs import ChunkPlayer, Job, TournamentError
from dealroom.play.progress import Progress
from dealroom.play.tournament import (
    DEFAULT_RUN,
    ConfigMismatchError,
    RunExistsError,
    Tournament,
    TournamentConfig,
    stored_seed,
)
from dealroom.protocol.record import NegotiationRecord
from dealroom.protocol.secret import Secret
from dealroom.store.results import ResultsStore

CONFIG = TournamentConfig(
    agents=("boulware", "conceder", "hardliner"), tiers=("low", "high"), per_pair=3, seed=11
)


def records(path: Path, run: str = "tournament") -> dict[str, NegotiationRecord]:
    with ResultsStore(path) as store:
        return {row.key: row.record for row in store.iter(run)}


def play_all(path: Path, config: TournamentConfig = CONFIG, **kwargs: object) -> Progress:
    with ResultsStore(path) as store:
        return Tournament(config, store).run(**kwargs)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def serial(tmp_path_factory: pytest.TempPathFactory) -> dict[str, NegotiationRecord]:
    path = tmp_path_factory.mktemp("serial") / "t.db"
    play_all(path)
    return records(path)


def test_every_agent_meets_every_other_in_both_seats_per_tier_and_index() -> None:
    jobs = CONFIG.jobs()
    assert len(jobs) == 6 * 2 * 3  # ordered pairs x tiers x per_pair
    assert Counter((j.buyer, j.seller) for j in jobs) == {
        (b, s): 6 for b in CONFIG.agents for s in CONFIG.agents if b != s
    }
    assert len({j.key for j in jobs}) == len(jobs)
    assert jobs[0].key == "tournament/low/00000/boulware/conceder"


def test_self_play_adds_each_agent_against_itself() -> None:
    config = TournamentConfig(agents=("boulware", "linear"), per_pair=1, self_play=True)
    assert sorted(config.pairings()) == [
        ("boulware", "boulware"),
        ("boulware", "linear"),
        ("linear", "boulware"),
        ("linear", "linear"),
    ]


def test_every_pairing_plays_the_same_scenario_at_each_index() -> None:
    by_slot: dict[tuple[str, int], set[str]] = {}
    for job in CONFIG.jobs():
        by_slot.setdefault((job.tier, job.index), set()).add(job.scenario().model_dump_json())
    assert all(len(scenarios) == 1 for scenarios in by_slot.values())
    assert len({s for group in by_slot.values() for s in group}) == 6


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"agents": ("boulware",)}, "no pairings"),
        ({"agents": ("boulware", "boulware")}, "only once"),
        ({"agents": ("a/b", "c")}, "without '/'"),
        ({"agents": ("a", "b"), "per_pair": 0}, "at least 1"),
        ({"agents": ("a", "b"), "tiers": ()}, "at least one"),
        ({"agents": ("a", "b"), "tiers": ("huge",)}, "unknown tiers"),
    ],
)
def test_bad_configurations_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(TournamentError, match=message):
        TournamentConfig(**kwargs)  # type: ignore[arg-type]


def test_chunks_cover_every_job_once_in_order() -> None:
    jobs = CONFIG.jobs()
    chunks = chunked(jobs, workers=2)
    assert [j for chunk in chunks for j in chunk] == jobs
    assert max(len(c) for c in chunks) == max(1, len(jobs) // 16)
    assert [len(c) for c in chunked(jobs, workers=2, size=10)] == [10, 10, 10, 6]


def test_the_store_holds_one_row_per_job_and_the_run_its_seed(
    tmp_path: Path, serial: dict[str, NegotiationRecord]
) -> None:
    assert set(serial) == {job.key for job in CONFIG.jobs()}
    with ResultsStore(tmp_path / "x.db") as store:
        Tournament(CONFIG, store, run_name="r2").run()
        row = store.get("r2/high/00002/hardliner/boulware")
        assert row is not None
        assert row.extra == {"index": 2}
        assert store.run_config("r2") == CONFIG.as_dict()
        assert CONFIG.as_dict()["seed"] == 11  # a public int seed, as a test may use


def test_same_seed_and_agents_give_the_same_records_serial_and_in_two_processes(
    tmp_path: Path, serial: dict[str, NegotiationRecord]
) -> None:
    progress = play_all(tmp_path / "p.db", backend=ProcessBackend(2, chunk_size=5))
    assert records(tmp_path / "p.db") == serial
    assert progress.done == len(serial)
    assert progress.deals == sum(r.outcome.status == "deal" for r in serial.values())


def test_a_run_in_the_store_is_not_overwritten_without_resume(tmp_path: Path) -> None:
    play_all(tmp_path / "t.db")
    with pytest.raises(RunExistsError) as caught:
        play_all(tmp_path / "t.db")
    assert caught.value.stored == len(CONFIG.jobs())


def test_resuming_with_a_different_configuration_is_refused(tmp_path: Path) -> None:
    play_all(tmp_path / "t.db")
    bigger = TournamentConfig(
        agents=CONFIG.agents, tiers=CONFIG.tiers, per_pair=4, seed=CONFIG.seed
    )
    with pytest.raises(ConfigMismatchError, match="per_pair: stored 3, asked 4"):
        play_all(tmp_path / "t.db", bigger, resume=True)


class Stop(Exception):
    pass


def test_an_interrupted_run_resumes_without_loss_or_duplicates(
    tmp_path: Path, serial: dict[str, NegotiationRecord]
) -> None:
    def stop_after_seven(progress: Progress) -> None:
        if progress.done == 7:
            raise Stop

    path = tmp_path / "t.db"
    with pytest.raises(Stop):
        play_all(path, on_progress=stop_after_seven)
    assert len(records(path)) == 7
    progress = play_all(path, resume=True, backend=ProcessBackend(2))
    assert (progress.skipped, progress.done, progress.new_rows) == (7, len(serial) - 7, 29)
    assert records(path) == serial
    again = play_all(path, resume=True)
    assert (again.skipped, again.done) == (len(serial), 0)


def test_an_empty_run_left_by_another_configuration_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    with ResultsStore(path) as store:
        store.set_run_config("tournament", {"agents": ["x"]})
    play_all(path)
    with ResultsStore(path) as store:
        assert store.run_config("tournament") == CONFIG.as_dict()


@pytest.mark.anyio
async def test_the_async_runner_gives_the_same_records_with_many_in_flight(
    tmp_path: Path, serial: dict[str, NegotiationRecord]
) -> None:
    player = ChunkPlayer()
    in_flight, most = 0, 0

    async def play_job(job: Job) -> NegotiationRecord:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        await anyio.sleep(0.001 * (job.index % 3))  # finish out of order
        in_flight -= 1
        return player.play(job)

    with ResultsStore(tmp_path / "a.db") as store:
        progress = await Tournament(CONFIG, store).run_async(play_job, limit=4)
    assert progress.done == len(serial)
    assert most == 4
    assert records(tmp_path / "a.db") == serial


def test_the_serial_backend_yields_jobs_in_order() -> None:
    jobs = CONFIG.jobs()[:3]
    assert [job for job, _ in SerialBackend().run(jobs, ChunkPlayer())] == jobs


@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="ray is not installed")
@pytest.mark.slow
def test_the_ray_backend_gives_the_same_records_as_the_local_one(
    tmp_path: Path, serial: dict[str, NegotiationRecord]
) -> None:
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        play_all(tmp_path / "r.db", backend=RayBackend(chunk_size=6))
    finally:
        ray.shutdown()
    assert records(tmp_path / "r.db") == serial


def test_every_stored_negotiation_can_be_rebuilt_at_every_action_boundary(
    serial: dict[str, NegotiationRecord],
) -> None:
    checked = 0
    for record in serial.values():
        for at in range(len(record.events)):
            try:
                room = rebuild(record.scenario, record.events, at)
            except ForkError as exc:  # inside one action, or the closing one
                assert "withdraws an offer" in str(exc) or "ends the negotiation" in str(exc)
                continue
            assert room.referee.events == record.events[:at]
            checked += 1
    assert checked > len(serial) * 10


def test_a_fork_from_event_zero_with_the_same_agents_is_the_original(
    serial: dict[str, NegotiationRecord],
) -> None:
    record = serial["tournament/high/00001/conceder/boulware"]
    again = fork(
        record,
        0,
        resolve("conceder"),
        resolve("boulware"),
        names=("conceder", "boulware"),
        seed=CONFIG.seed,
    )
    assert again == record


def test_worker_processes_are_not_forked_from_a_driver_that_runs_threads() -> None:
    assert _context().get_start_method() == "fork"
    release = threading.Event()
    helper = threading.Thread(target=release.wait, args=(10,))
    helper.start()
    try:
        assert _context().get_start_method() == "forkserver"
    finally:
        release.set()
        helper.join(timeout=10)


def test_by_default_a_tournament_draws_under_a_fresh_secret_stored_with_its_config() -> None:
    first, second = TournamentConfig(agents=CONFIG.agents), TournamentConfig(agents=CONFIG.agents)
    assert isinstance(first.seed, Secret) and first.seed != second.seed
    assert first.as_dict()["secret"] == first.seed.hex()
    assert "seed" not in first.as_dict()
    assert first.jobs()[0].scenario() != second.jobs()[0].scenario()
    # Common random numbers under the secret: both seat orders of a pairing, same scenario.
    by_key = {(j.tier, j.index, j.buyer, j.seller): j.scenario() for j in first.jobs()}
    assert by_key["low", 1, "boulware", "conceder"] == by_key["low", 1, "conceder", "boulware"]


def test_resuming_with_another_secret_is_refused_without_showing_either(tmp_path: Path) -> None:
    one, other = Secret(b"\x01" * 16), Secret(b"\x02" * 16)
    with ResultsStore(tmp_path / "s.db") as store:
        config = TournamentConfig(agents=CONFIG.agents, per_pair=1, seed=one)
        Tournament(config, store).run()
        assert stored_seed(store, DEFAULT_RUN) == one
        again = TournamentConfig(agents=CONFIG.agents, per_pair=1, seed=other)
        with pytest.raises(ConfigMismatchError) as caught:
            Tournament(again, store).pending(resume=True)
    assert caught.value.differences == ["secret: the stored and the asked secret differ"]
    assert one.hex() not in str(caught.value) and other.hex() not in str(caught.value)


def test_a_chunk_of_seat_jobs_keeps_each_endpoint_within_its_limit() -> None:
    """What a Ray task runs (``ChunkPlayer`` on seat jobs): each endpoint's limit holds inside
    it, below the chunk's own concurrency."""
    from dealroom.agents.llm import LLMPlayer, LLMSettings, RetryPolicy
    from dealroom.play.players import Endpoint, Player
    from dealroom.play.registry import resolve_player
    from fake_openai import negotiator, serve, with_latency

    with serve(with_latency(negotiator(accept_from_wake=2), 0.2)) as fake:

        def resolver(spec: str) -> Player:
            if not spec.startswith("llm:"):
                return resolve_player(spec)
            settings = LLMSettings(retry=RetryPolicy(attempts=1, timeout_s=20))
            player = LLMPlayer.from_spec(
                spec, base_url=fake.base_url, api_key="k", settings=settings
            )
            player.endpoint = Endpoint("fake", 2)
            return player

        config = TournamentConfig(
            agents=("llm:a", "boulware", "conceder"), tiers=("low",), per_pair=2, seed=1
        )
        jobs = [job for job in config.jobs() if "llm:a" in job.key]
        played = ChunkPlayer(resolver, concurrency=8)(jobs)
    assert len(played) == len(jobs) == 8
    assert all(p.extra["players"] and not p.extra.get("errors") for p in played)
    assert fake.peak == 2  # two at once (the limit), never more


def test_a_learner_plays_only_its_own_pairings_in_its_seat() -> None:
    agents = ("trained", "boulware", "conceder")
    both = TournamentConfig(agents=agents, learner="trained")
    assert both.pairings() == [
        ("trained", "boulware"),
        ("trained", "conceder"),
        ("boulware", "trained"),
        ("conceder", "trained"),
    ]
    buyer = TournamentConfig(agents=agents, learner="trained", learner_role="buyer")
    assert buyer.pairings() == [("trained", "boulware"), ("trained", "conceder")]
    assert buyer.as_dict()["learner_role"] == "buyer"
    assert "learner" not in TournamentConfig(agents=agents).as_dict()  # old runs still resume
    with pytest.raises(TournamentError, match="not one of the agents"):
        TournamentConfig(agents=agents, learner="nobody")
