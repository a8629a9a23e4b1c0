"""Every limit and enum of a grading job, defined once.

The grader enforces these; the Django side (model constraints, the bank schema, forms, the
submission service) reads them from here, so an exercise the grader would refuse can never be
saved or loaded.
Standard library only: Django imports this module without torch.
"""

from __future__ import annotations

QUEUES = ("cpu", "gpu")
STATUSES = ("passed", "failed", "error", "timed_out", "out_of_memory", "rejected")

MAX_SOURCE_BYTES = 64 << 10  # a submission, a reference or a wrong solution
MAX_OUTPUT_CHARS = 8 << 10  # what a run printed, as stored with its verdict

# Wall-clock seconds for one whole submission: (0, MAX_TIME_LIMIT].
DEFAULT_TIME_LIMIT = 10.0
MAX_TIME_LIMIT = 60.0

# Memory for one run, in MiB: [MIN_MEMORY_MB, MAX_MEMORY_MB].
DEFAULT_MEMORY_MB = 1024
MIN_MEMORY_MB = 64
MAX_MEMORY_MB = 16384

MAX_CHECKS = 64
MAX_CHECK_NAME_CHARS = 200
