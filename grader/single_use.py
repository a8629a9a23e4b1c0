"""A single-use sandboxed process: a fresh interpreter that runs one job and exits.

CUDA cannot be initialised before a fork, so GPU slots cannot use the zygote's forked children.
The fork server starts this instead (fork, then exec, as pid 2 of a new PID namespace): it imports
torch and initialises CUDA while the filesystem is still whole, says it is ready (and whether
CUDA works: the zygote learns from the first such frame whether its runs have a device, without
ever initialising CUDA itself), waits for its job, and then isolates itself exactly as a forked
child does, except for RLIMIT_AS (the CUDA driver reserves far more address space than it uses;
the memory cgroup bounds it instead) and with /dev/nvidia* in its /dev. Without a GPU it runs on
the CPU, which makes it the "cold process per submission" of bench/grading_pool.py.
"""

from __future__ import annotations

import os
from typing import Any

_DETAIL_CHARS = 500


def cuda_state(torch: Any) -> tuple[bool, str]:
    """Initialise CUDA as a run will use it (a context, cuBLAS loaded) while libraries and
    devices are all visible; say whether it works, and why not."""
    if os.environ.get("CUDA_VISIBLE_DEVICES") == "":
        return False, "the device list is empty (GRADER_GPU_DEVICES=none)"
    if torch.version.cuda is None:
        return False, f"torch {torch.__version__} in the grader's interpreter is not a CUDA build"
    try:
        if not torch.cuda.is_available():
            return False, (
                f"torch {torch.__version__} (CUDA {torch.version.cuda}) finds no usable CUDA "
                "device or driver"
            )
        x = torch.ones(8, 8, device="cuda")
        (x @ x).sum().item()
        torch.cuda.synchronize()
        name = torch.cuda.get_device_name()
    except Exception as error:  # a broken driver: the zygote reports it, the runs use the CPU
        return False, f"CUDA failed to initialise: {type(error).__name__}: {error}"[:_DETAIL_CHARS]
    detail = f"{name}, torch {torch.__version__}, CUDA {torch.version.cuda}"
    return True, detail[:_DETAIL_CHARS]


def main() -> None:
    from grader import isolate

    # First, while this process has one thread: the threads CUDA starts must share the
    # sandbox's namespaces and root (isolate.enter_namespaces says why).
    isolate.enter_namespaces()

    import torch

    torch.set_num_threads(1)
    cuda, detail = cuda_state(torch)

    from grader import runner

    runner.serve(
        announce_ready=True,
        ready={"cuda": cuda, "cuda_detail": detail},
        namespaces_entered=True,
    )
