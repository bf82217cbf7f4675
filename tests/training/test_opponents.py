"""The LLM opponent inside the TRL environment: played through a loopback endpoint, every call
recorded, replayable without the endpoint; opponent specs checked before training."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dealroom.play.registry import AgentSpecError
from dealroom.protocol import DEFAULT_RULES, model_seat, seat_view
from dealroom.protocol.briefing import briefing
from dealroom.protocol.generator import scenario_at
from dealroom.protocol.text import money
from dealroom.training.opponents import (
    LLMOpponent,
    OpponentError,
    load_calls,
    openai_transport,
    replay_transport,
    training_opponent,
)
from dealroom.training.trl import BargainToolEnv
from fake_openai import Text, ToolCalls, scripted, serve


def _play(opponent: LLMOpponent) -> tuple[list[str], float]:
    env = BargainToolEnv(opponent=opponent, role="buyer")
    texts = [env.reset(index=2)]
    texts.append(env.make_offer(700.0, message="Cash today."))
    texts.append(env.wait_for_opponent())
    return texts, env.get_reward()


def _brain() -> object:
    return scripted(
        [
            ToolCalls((("make_offer", {"price": 1250.0, "message": "Firm."}),)),
            ToolCalls((("get_state", {}),)),
            ToolCalls((("make_offer", {"price": "cheap"}),)),
            ToolCalls((("wait_for_opponent", {"timeout_s": 30}),)),
        ],
        then=Text("I wait."),
    )


def test_llm_opponent_plays_through_tool_calls_and_records_each_call(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    with serve(_brain()) as api:  # type: ignore[arg-type]
        opponent = LLMOpponent("frontier", openai_transport(api.base_url, retries=0), log=log)
        texts, reward = _play(opponent)
        requests = api.requests
    assert "$1,250.00" in "\n".join(texts)
    assert "Firm." in "\n".join(texts)
    assert len(opponent.calls) == len(requests) >= 3
    for call, request in zip(opponent.calls, requests, strict=True):
        assert {k: request[k] for k in call.request} == call.request
    assert all(c.response is not None and c.error is None for c in opponent.calls)
    assert load_calls(log) == opponent.calls
    # The one model seat: the briefing alone opens, then only the model's calls and results.
    messages = opponent.calls[-1].request["messages"]
    scenario = scenario_at(0, 2, "mid")
    assert messages[0] == {"role": "user", "content": briefing(seat_view(scenario, "seller"))}
    assert [m["role"] for m in messages[1:]] == ["assistant", "tool"] * 4
    assert opponent.calls[-1].request["tools"] == model_seat.tools(DEFAULT_RULES)
    # get_state was answered at once, and a bad price went back as the served refusal.
    tool_texts = [m["content"] for m in messages if m["role"] == "tool"]
    assert any(t.startswith("you: the seller; item: ") for t in tool_texts)
    assert any(t.startswith("invalid_arguments: price must be a JSON number") for t in tool_texts)
    # The learner's offer reached the opponent as the news of its wait.
    assert any("] buyer offered $700.00 (o" in t for t in tool_texts)
    assert isinstance(reward, float)


def test_the_opponent_never_reads_the_learners_value() -> None:
    scenario = scenario_at(0, 2, "mid")
    buyer_value = money(seat_view(scenario, "buyer").private_value, scenario.currency)
    with serve(_brain()) as api:  # type: ignore[arg-type]
        opponent = LLMOpponent("frontier", openai_transport(api.base_url, retries=0))
        _play(opponent)
    seen = json.dumps([c.request for c in opponent.calls])
    assert buyer_value not in seen
    seller_value = money(seat_view(scenario, "seller").private_value, scenario.currency)
    assert seller_value in seen  # its own briefing


def test_a_recorded_rollout_replays_without_the_endpoint() -> None:
    with serve(_brain()) as api:  # type: ignore[arg-type]
        live = LLMOpponent("frontier", openai_transport(api.base_url, retries=0))
        texts, reward = _play(live)
    replayed = LLMOpponent("frontier", replay_transport(live.calls))
    assert _play(replayed) == (texts, reward)
    assert [c.request for c in replayed.calls] == [c.request for c in live.calls]


def test_a_replay_that_diverges_is_an_error() -> None:
    with serve(_brain()) as api:  # type: ignore[arg-type]
        live = LLMOpponent("frontier", openai_transport(api.base_url, retries=0))
        _play(live)
    env = BargainToolEnv(opponent=LLMOpponent("frontier", replay_transport(live.calls)))
    env.reset(index=2)
    with pytest.raises(OpponentError, match="differs from the recording"):
        env.make_offer(650.0)  # not what was played: the opponent's wait reads otherwise
        env.wait_for_opponent()


def test_an_unreachable_endpoint_is_one_line() -> None:
    with serve(_brain()) as api:  # type: ignore[arg-type]
        url = api.base_url
    opponent = LLMOpponent("frontier", openai_transport(url, retries=0, timeout=2.0))
    env = BargainToolEnv(opponent=opponent)
    env.reset(index=0)
    with pytest.raises(OpponentError) as caught:
        env.make_offer(700.0)
    assert "\n" not in str(caught.value)
    assert opponent.calls[0].error is not None


@pytest.mark.parametrize(
    ("reply", "says"),
    [
        ({"choices": []}, "has no message"),
        ({"choices": [{"message": "hi"}]}, "has no message"),
        (
            {"choices": [{"message": {"tool_calls": [{"function": {"arguments": "{}"}}]}}]},
            "names no function",
        ),
    ],
)
def test_a_reply_without_a_message_or_a_named_call_is_one_recorded_line(
    reply: dict[str, object], says: str
) -> None:
    opponent = LLMOpponent("frontier", lambda _negotiation, _body: reply)
    env = BargainToolEnv(opponent=opponent)
    env.reset(index=0)
    with pytest.raises(OpponentError, match=says) as caught:
        env.make_offer(700.0)
        env.wait_for_opponent()
    assert "\n" not in str(caught.value)
    assert opponent.calls[-1].error == str(caught.value)


def test_training_opponent_specs() -> None:
    assert training_opponent("boulware:e=0.2") == "boulware:e=0.2"
    llm = training_opponent("llm:frontier", base_url="http://127.0.0.1:9/v1")
    assert isinstance(llm, LLMOpponent) and llm.name == "llm:frontier"
    roster = {"judge": {"model": "m-1", "base_url": "http://127.0.0.1:9/v1", "temperature": 0.5}}
    entry = training_opponent("judge", roster=roster)
    assert isinstance(entry, LLMOpponent) and entry.model == "m-1" and entry.temperature == 0.5
    for bad in ("nosuch", "boulware:zz=1", "llm:", "human"):
        with pytest.raises(AgentSpecError):
            training_opponent(bad)


def test_a_tool_the_opponent_was_not_offered_is_refused_as_the_server_refuses() -> None:
    brain = scripted([ToolCalls((("new_negotiation", {}),))], then=Text("I wait."))
    with serve(brain) as api:  # type: ignore[arg-type]
        opponent = LLMOpponent("frontier", openai_transport(api.base_url, retries=0))
        _play(opponent)
    messages = opponent.calls[-1].request["messages"]
    refused = [m["content"] for m in messages if m["role"] == "tool"]
    assert refused[0] == "{'error': 'Tool new_negotiation not found.'}"  # as in TRL's loop


def test_an_llm_spec_is_an_opponent_of_the_tool_environment_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from dealroom.training.gym_env import BargainEnv

    with serve(_brain()) as api:  # type: ignore[arg-type]
        monkeypatch.setenv("OPENAI_BASE_URL", api.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        env = BargainToolEnv(opponent="llm:frontier", role="buyer")
        env.reset(index=2)
        assert "seller offered $1,250.00" in env.wait_for_opponent()
        requests = api.requests
        with pytest.raises(AgentSpecError, match="plays BargainToolEnv"):
            BargainEnv(opponent="llm:frontier", role="buyer")
    assert {r["model"] for r in requests} == {"frontier"}
    assert len(requests) >= 1


def test_a_person_cannot_be_an_environments_opponent() -> None:
    with pytest.raises(AgentSpecError, match="plays through a seat"):
        BargainToolEnv(opponent="human").reset()


def test_a_roster_entry_of_the_tournament_is_a_grpo_opponent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dealroom.cli.train import _roster

    models = tmp_path / "models.toml"
    models.write_text(
        '[models.frontier]\nmodel = "gpt-x"\nendpoint = "http://127.0.0.1:9/v1"\n'
        'key_env = "FRONTIER_KEY"\ntemperature = 0.3\nmax_tokens = 64\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("FRONTIER_KEY", "sk-roster")
    opponent = training_opponent("frontier", roster=_roster(models))
    assert isinstance(opponent, LLMOpponent)
    assert (opponent.model, opponent.temperature, opponent.max_tokens) == ("gpt-x", 0.3, 64)
    with pytest.raises(AgentSpecError):
        training_opponent("nobody", roster=_roster(models))
