"""The demo model plays a whole negotiation to its end, as the tournament's ``llm:`` seat.

    dealroom train demo-model --out demo
    python benchmarks/demo_model_plays.py --model demo [--opponent boulware] [--role buyer]
                                          [--tier mid] [--threads 1]

``dealroom match --buyer llm:demo --seller OPPONENT`` (or the other seat) plays against a
loopback endpoint (``tests/fake_openai.py``) whose every answer is the checkpoint's: the
request's conversation rendered in the checkpoint's own chat template with the tools (what
``train serve`` renders), read whole by the model. The conversation only grows, so the
model's key/value cache of the previous request is kept and only the new tokens are read.

An untrained 135M model left free almost never writes a tool call (it answers in prose, and a
reply without a call ends the seat's play), so the reply is the call the model finds most
likely, by the mean log-probability of its tokens as the template writes an assistant tool
call, among the calls that move the negotiation: ``wait_for_opponent``, ``make_offer`` at the
price the model writes itself after ``"price": `` (greedy digits), ``accept`` and ``reject``
of the other side's live offer, and ``walk_away`` (a grammar constrains a small model the same
way: tests/agents/test_llm_smoke.py). ``get_state`` is not among them: it moves no clock, and
the results already hold everything. The model negotiates badly; what this shows is that a
whole negotiation fits its 8,192-token context and is played to its end.

Printed: the outcome, the model's calls by tool, the longest prompt in tokens against the
model's context, and the time. Needs the ``train`` extra.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import threading
import time
from collections import Counter
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path.insert(0, str(TESTS))

from dealroom.cli import main as dealroom  # noqa: E402
from dealroom.protocol.model_seat import canonical  # noqa: E402
from fake_openai import Reply, ToolCalls, seat_role, serve  # noqa: E402

PUBLIC_SECRET = "5eed5eed5eed5eed5eed5eed5eed5eed"
_OFFER = re.compile(r"(buyer|seller) (o\d+) at ")
_DIGITS = re.compile(r"[0-9.]")


def their_offer(messages: list[dict[str, Any]], role: str) -> str | None:
    """The other side's live offer id on the newest result's ``live offers:`` line."""
    for message in reversed(messages):
        if message.get("role") != "tool":
            continue
        for line in str(message.get("content") or "").splitlines():
            if line.startswith("live offers: "):
                ids = [o for by, o in _OFFER.findall(line) if by != role]
                return ids[0] if ids else None
    return None


class DemoBrain:
    """Answers each request with the call the checkpoint finds most likely (module docstring)."""

    def __init__(self, path: str, threads: int) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        torch.set_num_threads(threads)
        self.torch = torch
        self.tokenizer: Any = AutoTokenizer.from_pretrained(path)
        self.model: Any = AutoModelForCausalLM.from_pretrained(path)
        self.model.eval()
        self.context = int(self.model.config.max_position_embeddings)
        self.ids: list[int] = []
        self.cache: Any = None
        self.last: Any = None  # the logits after the last token read
        self.longest = 0
        self.lock = threading.Lock()

    def _render(self, messages: list[dict[str, Any]], tools: Any, generation: bool) -> str:
        return self.tokenizer.apply_chat_template(
            messages, tools=tools, tokenize=False, add_generation_prompt=generation
        )

    def _encode(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def _forward(self, ids: list[int]) -> Any:
        from transformers import DynamicCache

        if self.cache is None:
            self.cache = DynamicCache()
        with self.torch.no_grad():
            out = self.model(
                input_ids=self.torch.tensor([ids]), past_key_values=self.cache, use_cache=True
            )
        return out.logits[0]

    def _keep(self, length: int) -> None:
        """Cut the cache back to its first ``length`` tokens."""
        if self.cache is not None and (extra := self.cache.get_seq_length() - length) > 0:
            self.cache.crop(-extra)

    def _read(self, prompt: list[int]) -> None:
        """Bring the cache to ``prompt``: keep the common prefix, read the rest."""
        keep = 0
        while keep < min(len(self.ids), len(prompt)) and self.ids[keep] == prompt[keep]:
            keep += 1
        keep = min(keep, len(prompt) - 1)  # always read at least the last token
        self._keep(keep)
        self.last = self._forward(prompt[keep:])[-1]
        self.ids = list(prompt)

    def _score(self, completion: list[int]) -> float:
        """Mean log-probability of ``completion`` after the prompt; the cache is left as it was."""
        logits = self._forward(completion)
        steps = self.torch.cat([self.last[None], logits[:-1]])
        logp = self.torch.log_softmax(steps.float(), dim=-1)
        picked = logp[self.torch.arange(len(completion)), self.torch.tensor(completion)]
        self._keep(len(self.ids))
        return float(picked.mean())

    def _price(self, head: list[int]) -> float | None:
        """The price the model writes after ``head`` (greedy, digits and one point only)."""
        logits = self._forward(head)[-1]
        text = ""
        for _ in range(12):
            token = int(logits.argmax())
            piece = self.tokenizer.decode([token])
            piece = piece if text else piece.lstrip()  # a space before the number
            if piece and (not all(_DIGITS.match(c) for c in piece) or len(text) > 10):
                break
            text += piece
            logits = self._forward([token])[-1]
        self._keep(len(self.ids))
        try:
            return float(text) if text.strip(".") else None
        except ValueError:
            return None

    def _call_text(self, messages: list[dict[str, Any]], tools: Any, prompt: str, call: Any) -> str:
        message = {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"type": "function", "function": call}],
        }
        full = self._render([*messages, message], tools, generation=False)
        end = full.index(self.tokenizer.eos_token, len(prompt)) + len(self.tokenizer.eos_token)
        return full[len(prompt) : end]

    def __call__(self, request: dict[str, Any]) -> Reply:
        with self.lock:
            return self._answer(request)

    def _answer(self, request: dict[str, Any]) -> Reply:
        messages = canonical(request["messages"])
        tools = request["tools"]
        prompt = self._render(messages, tools, generation=True)
        prompt_ids = self._encode(prompt)
        self.longest = max(self.longest, len(prompt_ids))
        self._read(prompt_ids)
        role = seat_role(request)
        calls: list[tuple[str, dict[str, Any]]] = [("wait_for_opponent", {}), ("walk_away", {})]
        theirs = their_offer(request["messages"], role)
        if theirs is not None:
            calls += [("accept", {"offer_id": theirs}), ("reject", {"offer_id": theirs})]
        marker = 987654.25  # its text marks where the model writes the price
        offer_text = self._call_text(
            messages, tools, prompt, {"name": "make_offer", "arguments": {"price": marker}}
        )
        head = offer_text[: offer_text.index(str(marker))]
        price = self._price(self._encode(head))
        if price is not None and price > 0:
            calls.append(("make_offer", {"price": price}))
        scored = [
            (
                self._score(
                    self._encode(
                        self._call_text(messages, tools, prompt, {"name": name, "arguments": args})
                    )
                ),
                name,
                args,
            )
            for name, args in calls
        ]
        _, name, args = max(scored, key=lambda s: s[0])
        return ToolCalls(((name, args),))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="demo", help="checkpoint directory (default: demo)")
    parser.add_argument("--opponent", default="boulware")
    parser.add_argument("--role", choices=("buyer", "seller"), default="buyer")
    parser.add_argument("--tier", default="mid")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default: 1)")
    parser.add_argument("--secret", default=PUBLIC_SECRET)
    args = parser.parse_args()
    brain = DemoBrain(args.model, args.threads)
    seats = {"buyer": args.opponent, "seller": args.opponent, args.role: "llm:demo"}
    started = time.monotonic()
    with serve(brain) as endpoint, tempfile.TemporaryDirectory() as tmp:
        out = StringIO()
        with redirect_stdout(out):
            dealroom(
                [
                    *("match", "--buyer", seats["buyer"], "--seller", seats["seller"]),
                    *("--tier", args.tier, "--secret", args.secret, "--json"),
                    *("--base-url", endpoint.base_url, "--model-timeout", "600"),
                    *("--results", str(Path(tmp) / "demo.db")),
                ]
            )
        requests = len(endpoint.requests)
    seconds = time.monotonic() - started
    body = json.loads(out.getvalue())
    data = body["extra"]["players"][args.role]
    outcome = body["outcome"]
    calls = Counter(data.get("tool_calls") or {})
    print(
        f"the demo model as the {args.role} against {args.opponent} ({args.tier}): "
        f"{outcome['status']} ({outcome['end_reason']}"
        + (f" at {outcome['price']}" if outcome.get("price") is not None else "")
        + f"); the seat's play ended by: {data.get('ended_by')}"
    )
    print(
        f"model calls {data['model_calls']} ({requests} requests); tool calls "
        + ", ".join(f"{name} {n}" for name, n in sorted(calls.items()))
    )
    print(
        f"longest prompt {brain.longest:,} tokens of the model's {brain.context:,}; "
        f"{seconds:.0f} s ({args.threads} thread{'s' if args.threads > 1 else ''})"
    )


if __name__ == "__main__":
    main()
