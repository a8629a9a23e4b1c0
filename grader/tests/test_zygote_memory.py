"""Result frames cannot amplify in the zygote (issue 24, finding 2).

Every 8-byte tensor record decoded to a whole tensor object (~430 bytes) in the zygote, and every
frame was kept until the verdict: a run that sent well-formed frames grew the zygote by up to
2 GB, kept for its life. The stream is now held to its order as it arrives and the decoded cost of
a run is budgeted before anything is allocated.
"""

from __future__ import annotations

import os

from grader.tests.helpers import assert_still_grading, probe_job
from grader.tests.test_attacks import ZYGOTE_GROWTH_BOUND, _measured_grade, zygote_pids

RETAINED_BOUND = 32 << 20  # what a zygote may keep of a refused run

# Well-formed frames written straight to the result channel: each check frame holds 19,000
# empty tensors (15 bytes each on the wire).
FLOOD = """
import os, struct

def _s(text):
    raw = text.encode()
    return b"s" + struct.pack(">I", len(raw)) + raw

def _i(n):
    return b"i" + struct.pack(">H", 2) + n.to_bytes(2, "big", signed=True)

EMPTY = b"t" + bytes([4]) + b"bool" + bytes([1]) + struct.pack(">q", 0)
ITEMS = b"l" + struct.pack(">I", 19000) + EMPTY * 19000

def flood(indices):
    for index in indices:
        fields = {"kind": _s("check"), "index": _i(index), "values": ITEMS}
        body = b"d" + struct.pack(">I", 3) + b"".join(_s(k) + v for k, v in fields.items())
        os.write(3, struct.pack(">I", len(body)) + body)

def probe():
    flood(INDICES)
    return "blocked"
"""


def flood_job(indices: str, checks: int) -> dict:
    job = probe_job(FLOOD.replace("INDICES", indices), time_limit=30, memory_limit_mb=2048)
    job["checks"] = [{**job["checks"][0], "name": f"probe {n}"} for n in range(checks)]
    return job


def rss(pid: int) -> int:
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_a_flood_of_well_formed_frames_is_refused_within_a_bounded_cost(pool):
    # In order: one frame per check of a 64-check job, each decoding to 19,000 tensors (~520 MB
    # in all on main). Out of order: the same frame for check 0, a hundred times.
    attacks = {"in order": flood_job("range(64)", 64), "repeated": flood_job("[0] * 100", 1)}
    for name, job in attacks.items():
        before = {pid: rss(pid) for pid in zygote_pids(pool)}
        result, growth, cpu = _measured_grade(pool, job)
        assert result["status"] == "error", (name, result)
        assert "result channel" in result["message"], (name, result["message"])
        assert growth < ZYGOTE_GROWTH_BOUND, (name, growth >> 20)
        assert cpu < 1.0, (name, cpu)
        for pid, was in before.items():
            if os.path.exists(f"/proc/{pid}"):
                assert rss(pid) - was < RETAINED_BOUND, (name, (rss(pid) - was) >> 20)
    assert_still_grading(pool)
