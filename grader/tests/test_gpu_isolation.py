"""What a GPU slot's single-use process keeps, and where its threads live, when it isolates
itself after CUDA started (its device handles open, the driver's helper threads running).

No GPU here: the descriptors kept are chosen by kept_descriptors (a unit test below), and the
whole of isolate() runs in isolate_probe.py against null devices given NVIDIA's names.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from grader.isolate import WORKDIR, kept_descriptors
from grader.tests.helpers import REPO

CHR = stat.S_IFCHR | 0o666
FIFO = stat.S_IFIFO | 0o600
REG = stat.S_IFREG | 0o644
DIR = stat.S_IFDIR | 0o755
SOCK = stat.S_IFSOCK | 0o777
R, W, RW = os.O_RDONLY, os.O_WRONLY, os.O_RDWR


def test_the_cuda_drivers_own_descriptors_are_kept_and_nothing_else():
    descriptors = {
        4: ("/dev/nvidiactl", CHR, RW),
        5: ("/dev/nvidia-uvm", CHR, RW),
        6: ("/dev/nvidia-uvm", CHR, RW),
        7: ("/dev/nvidia0", CHR, RW),
        8: ("/dev/nvidia-caps/nvidia-cap1", CHR, R),
        9: ("pipe:[100]", FIFO, R),  # a pipe with both ends here (a wakeup pipe)
        10: ("pipe:[100]", FIFO, W),
        11: ("anon_inode:[eventfd]", 0o600, RW),
        12: ("anon_inode:[eventpoll]", 0o600, RW),
        13: ("/dev/null", CHR, RW),  # a character device, but not NVIDIA's
        14: ("/dev/nvidia0", REG, RW),  # not a device: a file of that name
        15: ("/usr/lib/x86_64-linux-gnu/libcuda.so.1", REG, R),
        16: ("/", DIR, R),
        17: ("socket:[200]", SOCK, RW),
        18: ("pipe:[300]", FIFO, R),  # its writer is elsewhere
        19: ("anon_inode:[pidfd]", 0o600, RW),
        20: ("anon_inode:inotify", 0o600, R),
        21: ("/dev/nvidia-foo (deleted)", REG, RW),
        22: ("/dev/shm/nvidia0", REG, RW),
        23: ("/memfd:cuda (deleted)", REG, RW),  # anonymous memory of its own
        24: ("/tmp/memfd:cuda (deleted)", REG, RW),
    }
    assert kept_descriptors(descriptors) == {4, 5, 6, 7, 8, 9, 10, 11, 12, 23}
    assert kept_descriptors({}) == set()


def probe(tmp_path: Path, *args: str) -> dict:
    if os.geteuid() != 0:
        pytest.skip("isolation needs root")
    root = tmp_path / "root"
    root.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "grader.tests.isolate_probe", str(root), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_isolation_keeps_the_nvidia_handles_and_moves_every_thread(tmp_path):
    report = probe(tmp_path)
    # The driver's handles and process-local wakeups survive; everything else is closed.
    assert report["kept"] == [
        "eventfd",
        "memfd",
        "nvidia-uvm",
        "nvidia0",
        "nvidiactl",
        "pipe_read",
        "pipe_write",
    ]
    # The nodes are in the sandbox's /dev, and the unprivileged uid can open more of them.
    assert {"nvidiactl", "nvidia0", "nvidia-uvm", "null", "urandom"} <= set(report["dev"])
    assert report["opens_nvidiactl"] is True
    assert report["uid"] >= 0x40000000
    # A thread started before isolation (as CUDA's are) sees the sandbox's root, not the
    # host's, and is in its namespaces, under its seccomp filter and no_new_privs.
    assert report["thread_root"] == report["root"]
    assert "sandbox" in report["root"] and "home" not in report["root"]
    assert report["thread_cwd"] == WORKDIR
    assert report["thread_namespaces"] == {"mnt": True, "net": True, "ipc": True, "uts": True}
    assert report["thread_seccomp"] == "2"
    assert report["thread_no_new_privs"] == "1"


def test_a_process_that_started_threads_before_its_namespaces_is_not_isolated(tmp_path):
    """unshare() would move only the calling thread: the others would keep the host's root."""
    report = probe(tmp_path, "--threads-first")
    assert "single thread" in report["refused"]
