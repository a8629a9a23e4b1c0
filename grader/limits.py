"""Every limit and enum of a grading job, defined once.

The grader enforces these; the Django side (model constraints, the bank schema, forms, the
submission service) reads them from here, so an exercise the grader would refuse can never be
saved or loaded.
Standard library only: Django imports this module without torch.
"""

from __future__ import annotations

import math

QUEUES = ("cpu", "gpu")
STATUSES = ("passed", "failed", "error", "timed_out", "out_of_memory", "rejected")

MAX_SOURCE_BYTES = 64 << 10  # a submission, a reference or a wrong solution
MAX_OUTPUT_CHARS = 8 << 10  # what a run printed, as stored with its verdict

# Wall-clock seconds for one whole submission: (0, MAX_TIME_LIMIT].
DEFAULT_TIME_LIMIT = 10.0
MAX_TIME_LIMIT = 60.0

# The limit a submission actually runs under: a multiple of the reference solution's measured
# time, at least the floor, at most the exercise's own time_limit (its ceiling). A flat 10 s let
# one learner's sleeping code hold a grading slot for 10 s when the reference takes 50 ms (issue
# 13, finding 8); the floor keeps honest but slower solutions (a Python loop instead of a
# vectorised op) and a loaded machine's jitter inside the limit.
TIME_LIMIT_FACTOR = 10.0
TIME_LIMIT_FLOOR = 3.0


def fitted_time_limit(reference_seconds: float | None, ceiling: float) -> float:
    """The time limit for a submission, given the reference's measured run (None: not measured
    yet, so the ceiling applies). Rounded up to a tenth of a second, as it is shown to learners."""
    if reference_seconds is None or reference_seconds < 0:
        return ceiling
    fitted = max(TIME_LIMIT_FLOOR, TIME_LIMIT_FACTOR * reference_seconds)
    return min(ceiling, math.ceil(fitted * 10) / 10)


# Memory for one run, in MiB: [MIN_MEMORY_MB, MAX_MEMORY_MB].
DEFAULT_MEMORY_MB = 1024
MIN_MEMORY_MB = 64
MAX_MEMORY_MB = 16384

MAX_CHECKS = 64
MAX_CHECK_NAME_CHARS = 200
