"""torch's CPU threads: the flag wins; without it, a CPU-only machine gets its idle cores."""

from __future__ import annotations

import pytest

from dealroom.training.models import TrainingSetupError
from dealroom.training.threads import choose_threads, idle_cores, set_threads


def test_idle_cores_are_the_cores_the_load_leaves_and_at_least_one() -> None:
    assert idle_cores(2, 0.2) == 2
    assert idle_cores(2, 1.0) == 1
    assert idle_cores(2, 5.3) == 1  # this project's shared machine: one thread
    assert idle_cores(16, 3.6) == 12
    assert idle_cores(4, 0.0) == 4


def choose(threads: int | None, **kwargs: object) -> tuple[int | None, str]:
    settings: dict[str, object] = {
        "cuda": False,
        "default": 2,
        "environ": {},
        "load": lambda: (5.0, 4.0, 4.0),
        "cores": lambda: 2,
    }
    settings.update(kwargs)
    return choose_threads(threads, **settings)  # type: ignore[arg-type]


def test_a_busy_cpu_gets_one_thread_and_a_quiet_one_keeps_torchs_default() -> None:
    assert choose(None) == (1, "idle cores (usable cores - load)")
    assert choose(None, load=lambda: (0.1, 0.1, 0.1))[0] == 2
    assert choose(None, cores=lambda: 16, default=8, load=lambda: (0.0, 0, 0))[0] == 8


def test_the_flag_wins_and_a_gpu_or_omp_num_threads_keep_torchs_choice() -> None:
    assert choose(3) == (3, "--threads")
    assert choose(None, cuda=True) == (None, "a GPU computes; torch's default")
    assert choose(None, environ={"OMP_NUM_THREADS": "4"}) == (None, "OMP_NUM_THREADS")
    with pytest.raises(TrainingSetupError, match=r"--threads must be in \[1, 1024\], not 5000"):
        choose(5000)


def test_set_threads_sets_torchs_thread_count() -> None:
    torch = pytest.importorskip("torch")  # typed Any: pyright runs without the train extra
    before = torch.get_num_threads()
    try:
        assert set_threads(1) == 1 == torch.get_num_threads()
        torch.set_num_threads(before)
        chosen = set_threads(None)  # this machine's load and cores (or its GPU, or OMP's)
        assert 1 <= chosen <= before and chosen == torch.get_num_threads()
    finally:
        torch.set_num_threads(before)
