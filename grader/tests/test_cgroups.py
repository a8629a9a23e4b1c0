"""The cgroup layer on hosts without cgroup v1 controllers (cgroup v2 only): it reports itself
inactive, and grading goes on under the rlimits."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from grader import SandboxPool
from grader.cgroups import Cgroups
from grader.tests.helpers import GRADER_PYTHON, exercise_job


def unified_only(tmp_path: Path, own: str = "/user.slice/session-1.scope") -> tuple[str, str]:
    """A /sys/fs/cgroup and /proc/self/cgroup as a cgroup v2-only host shows them."""
    root = tmp_path / "cgroup"
    (root / own.lstrip("/")).mkdir(parents=True)
    (root / "cgroup.controllers").write_text("cpuset cpu io memory hugetlb pids rdma misc\n")
    self_cgroup = tmp_path / "self-cgroup"
    self_cgroup.write_text(f"0::{own}\n")
    return str(root), str(self_cgroup)


def test_a_v2_only_host_makes_the_layer_inactive_and_touches_nothing(tmp_path):
    root, self_cgroup = unified_only(tmp_path)
    before = sorted(os.walk(root))
    cgroups = Cgroups(root=root, self_cgroup=self_cgroup)
    assert (cgroups.active, cgroups.cpu_active) == (False, False)
    assert cgroups.memory_parent is None and cgroups.pids_parent is None
    assert sorted(os.walk(root)) == before


@pytest.mark.parametrize("content", ["", "garbage\n", "4:memory\n"])
def test_an_unreadable_cgroup_list_makes_the_layer_inactive(tmp_path, content):
    self_cgroup = tmp_path / "self-cgroup"
    self_cgroup.write_text(content)
    assert Cgroups(root=str(tmp_path), self_cgroup=str(self_cgroup)).active is False


def test_a_gpu_slot_on_a_v2_only_mount_grades_and_reports_the_layer(tmp_path):
    """The zygote runs in a mount namespace where /sys/fs/cgroup is a cgroup2 mount (what a
    v2-only host has there): the pool starts, reports the layer inactive, and grades."""
    wrapper = tmp_path / "python-on-cgroup2"
    wrapper.write_text(
        "#!/bin/sh\n"
        "exec /usr/bin/unshare --mount --propagation private /bin/sh -c "
        "'/usr/bin/mount -t cgroup2 none /sys/fs/cgroup && exec \"$@\"' "
        f'sh {GRADER_PYTHON} "$@"\n'
    )
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    with SandboxPool(wrapper, slots=1, kind="gpu", devices="none") as pool:
        assert pool.layers == {"cgroups": False, "cpu": False, "root": True}
        result = pool.grade(exercise_job("normalize-rows", "solution.py"))
        assert result["status"] == "passed", result
        assert pool.layers["cgroups"] is False
