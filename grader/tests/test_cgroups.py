"""The cgroup layer: v1 controllers; cgroup v2 where the memory and pids controllers can be
delegated to the zygote's groups; otherwise inactive (the pool's health says whether runs still
have a memory bound), with grading going on under the rlimits. Runs' groups are named so that
zygotes sharing a cgroup never touch each other's."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from grader import SandboxPool
from grader.cgroups import Cgroups, _own_dir, set_memory_limit
from grader.tests.helpers import GRADER_PYTHON, REPO, exercise_job


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
        # No memory bound at all on this GPU slot, and the pool's health says so.
        assert pool.layers == {"cgroups": False, "cpu": False, "root": True, "memory": False}
        result = pool.grade(exercise_job("normalize-rows", "solution.py"))
        assert result["status"] == "passed", result
        assert pool.layers["cgroups"] is False


def delegated_v2(tmp_path: Path) -> tuple[str, str]:
    """A cgroup v2 host where this process is in the root cgroup (as on the GPU VM): the
    memory, pids and cpu controllers can be enabled for its children. The kernel's files are
    plain files here: what the layer writes is read back by the test."""
    root = tmp_path / "cgroup"
    root.mkdir()
    (root / "cgroup.controllers").write_text("cpuset cpu io memory hugetlb pids rdma misc\n")
    (root / "cgroup.subtree_control").write_text("")
    self_cgroup = tmp_path / "self-cgroup"
    self_cgroup.write_text("0::/\n")
    return str(root), str(self_cgroup)


def test_a_v2_host_that_delegates_memory_gets_v2_limits(tmp_path):
    # On a v2-only host the layer was inactive: one run held +2.4 GB against a 1024 MB limit.
    root, self_cgroup = delegated_v2(tmp_path)
    cgroups = Cgroups(root=root, self_cgroup=self_cgroup)
    assert (cgroups.active, cgroups.cpu_active, cgroups.unified) == (True, True, True)
    parent = Path(cgroups.memory_parent)
    assert parent.parent == Path(root) and parent.name.startswith(f"quizbank-{os.getpid()}-")
    group = cgroups.create(memory_bytes=300 << 20, pids=64)
    run = Path(group.memory)
    assert group.procs_files == [str(run / "cgroup.procs")]  # one hierarchy: joined once
    assert (run / "memory.max").read_text() == str(300 << 20)
    assert (run / "pids.max").read_text() == "64"
    assert (run / "cpu.max").read_text() == "100000 100000"
    (run / "memory.current").write_text(str(200 << 20))
    set_memory_limit(str(run), 100 << 20)
    assert (run / "memory.max").read_text() == str(300 << 20)
    assert not group.oom_killed()
    (run / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n")
    assert group.oom_killed()
    for name in ("memory.max", "pids.max", "cpu.max", "cpu.weight", "memory.current"):
        (run / name).unlink()
    (run / "memory.events").unlink()
    (run / "cgroup.procs").unlink(missing_ok=True)
    cgroups.close()
    assert not run.exists()


def test_run_groups_of_zygotes_in_separate_pid_namespaces_never_collide():
    """Two zygotes that are both pid 1 of their own PID namespace, under the same cgroups (what
    containers and the test guard have): each makes and removes only its own groups."""
    if not Cgroups().active:
        pytest.skip("no writable cgroup v1 memory and pids controllers here")
    script = (
        "import sys; from grader.cgroups import Cgroups\n"
        "c = Cgroups(); g = c.create(memory_bytes=64 << 20, pids=8)\n"
        "print(g.memory, c.memory_parent, flush=True); sys.stdin.readline()\n"
        "g.remove(); c.close()\n"
    )
    own = _own_dir("memory")
    assert own is not None
    planted = Path(own) / "quizbank-2-0"  # a group of the old naming: not this zygote's
    planted.mkdir(exist_ok=True)
    zygotes = []
    try:
        for _ in range(2):
            zygotes.append(
                subprocess.Popen(
                    ["unshare", "--pid", "--fork", sys.executable, "-c", script],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                    cwd=REPO,
                )
            )
        groups = [zygote.stdout.readline().split() for zygote in zygotes]
        assert all(len(line) == 2 for line in groups), groups
        assert groups[0][0] != groups[1][0] and groups[0][1] != groups[1][1], groups
        zygotes[1].communicate("\n", timeout=30)  # the second removes its own groups only
        assert os.path.isdir(groups[0][0]) and planted.is_dir()
        zygotes[0].communicate("\n", timeout=30)
        assert not os.path.exists(groups[0][0]) and not os.path.exists(groups[0][1])
    finally:
        for zygote in zygotes:
            zygote.kill()
        planted.rmdir()
