"""dealroom's bilateral-trade negotiation as a verifiers 0.4 environment (``dealroom-verifiers``).

``vf-eval dealroom-verifiers -m MODEL --env.taskset.server URL ...`` plays one negotiation per
rollout on a running ``dealroom serve --transport http``: the model in one seat (the one model
seat's conversation, as dealroom's ``llm:`` seat plays it), a house agent in the other, the
reward the seat's surplus share as dealroom scores it. See docs/harnesses.md ("verifiers").
verifiers finds the taskset, the harness and the env through ``__all__``.
"""

from dealroom_verifiers.environment import (
    DealroomConfig,
    DealroomData,
    DealroomEnv,
    DealroomEnvConfig,
    DealroomHarness,
    DealroomHarnessConfig,
    DealroomTask,
    DealroomTaskset,
)

__all__ = [
    "DealroomConfig",
    "DealroomData",
    "DealroomEnv",
    "DealroomEnvConfig",
    "DealroomHarness",
    "DealroomHarnessConfig",
    "DealroomTask",
    "DealroomTaskset",
]
