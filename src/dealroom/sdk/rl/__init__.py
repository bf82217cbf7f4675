"""Training: rewards, SFT export, and adapters for TRL, Gymnasium, PettingZoo and remote seats.

Importing this package registers the Gymnasium environment ``dealroom/Bargain-v0`` (when
gymnasium is installed: ``pip install 'dealroom[rl]'``). Everything else loads on first use, so
``dealroom.sdk.rl.remote`` stays importable with the standard library alone.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dealroom.sdk.rl.gym_env import BargainEnv
    from dealroom.sdk.rl.pettingzoo_env import BargainAECEnv
    from dealroom.sdk.rl.rewards import RewardSpec, RewardTerms, reward_terms
    from dealroom.sdk.rl.sft import sft_example
    from dealroom.sdk.rl.trl import BargainToolEnv

ENV_ID = "dealroom/Bargain-v0"
"""The Gymnasium id of :class:`BargainEnv`."""

_LAZY = {
    "BargainEnv": "dealroom.sdk.rl.gym_env",
    "BargainAECEnv": "dealroom.sdk.rl.pettingzoo_env",
    "BargainToolEnv": "dealroom.sdk.rl.trl",
    "RewardSpec": "dealroom.sdk.rl.rewards",
    "RewardTerms": "dealroom.sdk.rl.rewards",
    "reward_terms": "dealroom.sdk.rl.rewards",
    "sft_example": "dealroom.sdk.rl.sft",
}

__all__ = [
    "ENV_ID",
    "BargainAECEnv",
    "BargainEnv",
    "BargainToolEnv",
    "RewardSpec",
    "RewardTerms",
    "reward_terms",
    "sft_example",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _register() -> None:
    try:
        import gymnasium
    except ImportError:  # the rl extra is not installed
        return
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(id=ENV_ID, entry_point="dealroom.sdk.rl.gym_env:BargainEnv")


_register()
