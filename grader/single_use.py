"""A single-use sandboxed process: a fresh interpreter that runs one job and exits.

CUDA cannot be initialised before a fork, so GPU slots cannot use the zygote's forked children.
The fork server starts this instead (fork, then exec, as pid 2 of a new PID namespace): it imports
torch and initialises CUDA while the filesystem is still whole, says it is ready, waits for its
job, and then isolates itself exactly as a forked child does, except for RLIMIT_AS (the CUDA
driver reserves far more address space than it uses; the memory cgroup bounds it instead) and
with /dev/nvidia* in its /dev. Without a GPU it runs on the CPU, which makes it the "cold process
per submission" of bench/grading_pool.py.
"""

from __future__ import annotations


def main() -> None:
    import torch

    torch.set_num_threads(1)
    if torch.cuda.is_available():
        # Initialise the context and load cuBLAS while libraries and devices are all visible.
        x = torch.ones(8, 8, device="cuda")
        (x @ x).sum().item()

    from grader import runner

    runner.serve(announce_ready=True)
