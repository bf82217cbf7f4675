"""How many CPU threads torch computes with: given (``--threads``), or chosen for the machine.

torch's default is one thread per core, wherever other processes already run. On a CPU shared
with other work that is the slow choice: on this project's 2-core machine at load 4 to 6, the
demo model decoded 32 tokens after a 1,400-token prompt in 89 to 92 s with 2 threads and 23 to
35 s with one (threads that wait for a core hold up every parallel step). So, on a machine
without a GPU, and unless ``--threads`` or ``OMP_NUM_THREADS`` says otherwise, torch gets the
cores nobody else is using: the usable cores minus the 1-minute load average, at least 1 and
at most torch's own default. With a GPU, torch's default stays (the CPU only feeds it).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping

import structlog

from dealroom.training.models import TrainingSetupError, lib, require_train_extra

log = structlog.get_logger(__name__)

MAX_THREADS = 1024
"""More threads than any machine dealroom runs on has cores (a typo's bound)."""


def idle_cores(cores: int, load: float) -> int:
    """The cores left over at a load average: ``cores - load`` rounded, at least 1."""
    return max(1, min(cores, cores - math.floor(load + 0.5)))


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS has one)."""
    affinity: Callable[[int], set[int]] | None = getattr(os, "sched_getaffinity", None)
    if affinity is not None:
        return len(affinity(0))
    return os.cpu_count() or 1


def choose_threads(
    threads: int | None,
    *,
    cuda: bool,
    default: int,
    environ: Mapping[str, str] = os.environ,
    load: Callable[[], tuple[float, float, float]] | None = None,
    cores: Callable[[], int] = usable_cores,
) -> tuple[int | None, str]:
    """The thread count to set (None: leave torch's ``default``) and why, in a few words."""
    if threads is not None:
        if not 1 <= threads <= MAX_THREADS:
            raise TrainingSetupError(f"--threads must be in [1, {MAX_THREADS}], not {threads}")
        return threads, "--threads"
    if cuda:
        return None, "a GPU computes; torch's default"
    if environ.get("OMP_NUM_THREADS"):
        return None, "OMP_NUM_THREADS"
    loadavg = load or getattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))  # none on Windows
    return min(default, idle_cores(cores(), loadavg()[0])), "idle cores (usable cores - load)"


def set_threads(threads: int | None) -> int:
    """Set torch's intra-op thread count as ``choose_threads`` decides; the count in use."""
    require_train_extra()
    torch = lib("torch")
    chosen, why = choose_threads(
        threads, cuda=bool(torch.cuda.is_available()), default=int(torch.get_num_threads())
    )
    if chosen is not None:
        torch.set_num_threads(chosen)
    used = int(torch.get_num_threads())
    log.info("torch.threads", threads=used, chosen_by=why)
    return used
