"""Write tests/golden/records.json: the scripted pool's records as main played them.

The golden file pins the records of main before the engine restructure (issue 10): the same
scenarios, seed and agents must give byte-identical records afterwards. The scenarios are stored
in the file, so a change to scenario generation does not move these pins. Regenerate only for a
deliberate change of the rules or of an agent, and say so in the commit.
"""

import hashlib
import json
from pathlib import Path

from dealroom.agents import entries, resolve
from dealroom.engine.match import play
from dealroom.protocol import TIERS
from dealroom.protocol.generator import scenario_at

OUT = Path(__file__).with_name("records.json")


def main() -> None:
    names = [e.name for e in entries()]
    scenarios = [scenario_at(7, index, tier) for tier in TIERS for index in range(2)]
    pins = {}
    for scenario in scenarios:
        for buyer in names:
            for seller in names:
                rec = play(scenario, resolve(buyer), resolve(seller), names=(buyer, seller), seed=7)
                digest = hashlib.sha256(rec.model_dump_json().encode()).hexdigest()
                pins[f"{scenario.id}/{buyer}/{seller}"] = digest
    full = play(
        scenarios[2],
        resolve("boulware"),
        resolve("tit_for_tat"),
        names=("boulware", "tit_for_tat"),
        seed=7,
    )
    golden = {
        "scenarios": [json.loads(s.model_dump_json()) for s in scenarios],
        "sha256": pins,
        "example": full.model_dump_json(),
    }
    OUT.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
