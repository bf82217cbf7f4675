"""An LLM round robin from the command line against loopback endpoints (nothing leaves the machine).

    python examples/loopback_llm_round_robin.py OUT_DIR

Starts three OpenAI-compatible endpoints on 127.0.0.1 (``tests/fake_openai.py``: scripted
negotiators with 20, 50 and 100 ms of latency; the third fails every 7th request), writes a
roster for them to ``OUT_DIR/models.toml``, then runs exactly what a user would::

    dealroom tournament --models OUT_DIR/models.toml --agents boulware,conceder \\
        --tiers mid --per-pair 2 --secret SECRET --out OUT_DIR/llm.db
    dealroom report OUT_DIR/llm.db
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from dealroom.cli import main
from fake_openai import flaky, negotiator, serve, with_latency

SECRET = "b7e2c94a1f0d3865a9c4e17f20b6d358"
"""Published, so that every run plays the same scenarios: the same calls, tokens and cost
(the latencies and the wall time are this machine's)."""

ROSTER = """[models.{name}]
model = "{model}"
endpoint = "{url}"
key_env = "LOOPBACK_KEY"
temperature = 0.7
concurrency = 8
input_price = {input_price}
output_price = {output_price}
"""


def run(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    os.environ["LOOPBACK_KEY"] = "sk-loopback"
    with (
        serve(with_latency(negotiator(accept_from_wake=2), 0.02)) as quick,
        serve(with_latency(negotiator(accept_from_wake=4), 0.05)) as patient,
        serve(flaky(with_latency(negotiator(accept_from_wake=3), 0.1), every=7)) as shaky,
    ):
        roster = out / "models.toml"
        roster.write_text(
            "\n".join(
                ROSTER.format(
                    name=name, model=model, url=fake.base_url, input_price=i, output_price=p
                )
                for name, model, fake, i, p in (
                    ("quick", "quick-1", quick, 0.15, 0.60),
                    ("patient", "patient-1", patient, 2.50, 10.00),
                    ("shaky", "shaky-1", shaky, 1.00, 4.00),
                )
            )
        )
        argv = ["--models", str(roster), "--agents", "boulware,conceder", "--tiers", "mid"]
        argv += ["--secret", SECRET]
        main(["tournament", *argv, "--per-pair", "2", "--out", str(out / "llm.db")])
    main(["report", str(out / "llm.db")])


if __name__ == "__main__":
    run(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("loopback-run"))
