"""Training: rewards, SFT export, and adapters for TRL, Gymnasium, PettingZoo and remote seats.

Importing this package registers the Gymnasium environment ``dealroom/Bargain-v0`` (when
gymnasium is installed: ``pip install 'dealroom[rl]'``). Everything else loads on first use, so
``dealroom.training.remote`` stays importable with the standard library alone.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dealroom.training.gym_env import BargainEnv
    from dealroom.training.pettingzoo_env import BargainAECEnv
    from dealroom.training.rewards import RewardSpec, RewardTerms, reward_terms
    from dealroom.training.sft import sft_example
    from dealroom.training.trl import BargainToolEnv

ENV_ID = "dealroom/Bargain-v0"
"""The Gymnasium id of :class:`BargainEnv`."""

_LAZY = {
    "BargainEnv": "dealroom.training.gym_env",
    "BargainAECEnv": "dealroom.training.pettingzoo_env",
    "BargainToolEnv": "dealroom.training.trl",
    "RewardSpec": "dealroom.training.rewards",
    "RewardTerms": "dealroom.training.rewards",
    "reward_terms": "dealroom.training.rewards",
    "sft_example": "dealroom.training.sft",
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
        # gymnasium annotates register's `kwargs` as a bare `dict` (partially unknown).
        gymnasium.register(  # pyright: ignore[reportUnknownMemberType]
            id=ENV_ID, entry_point="dealroom.training.gym_env:BargainEnv"
        )


_register()
