"""Run as root by test_gpu_isolation.py: a process that holds what a single-use GPU process holds
when it isolates itself, isolates itself, and prints on stdout (JSON) what survived.

The CUDA driver is imitated: in a mount namespace of this process's own, /dev is a tmpfs holding
the nodes the sandbox binds plus nvidiactl, nvidia0 and nvidia-uvm, which are null devices under
NVIDIA's names; the process opens them (as the driver does while CUDA initialises) together with
descriptors that must not survive, and starts a thread that sleeps (as the driver's event thread
does). ``--threads-first`` starts that thread before the namespaces are entered, the order a
single-use process used before: isolation must then refuse to go on.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import sys
import threading
import time

from grader import isolate, linux

_DEVICES = {"null": 3, "zero": 5, "full": 7, "random": 8, "urandom": 9}
_FAKE_NVIDIA = ("nvidiactl", "nvidia0", "nvidia-uvm")


def fake_dev() -> None:
    linux.unshare(linux.CLONE_NEWNS)
    linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)
    linux.mount("tmpfs", "/dev", "tmpfs", linux.MS_NOSUID, "size=64k,mode=755")
    for name, minor in [*_DEVICES.items(), *((fake, 3) for fake in _FAKE_NVIDIA)]:
        path = "/dev/" + name
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, minor))
        os.chmod(path, 0o666)


def helper(started: threading.Event, tid: list[int]) -> None:
    tid.append(threading.get_native_id())
    started.set()
    time.sleep(3600)


def main() -> None:
    root, threads_first = sys.argv[1], "--threads-first" in sys.argv
    os.dup2(1, isolate.RESULT_FD)  # fd 3 is the result channel, kept whatever it is
    fake_dev()
    started, tid = threading.Event(), list[int]()
    thread = threading.Thread(target=helper, args=(started, tid), daemon=True)
    if threads_first:
        thread.start()
        started.wait()
    else:
        isolate.enter_namespaces()
    held = {name: os.open("/dev/" + name, os.O_RDWR) for name in _FAKE_NVIDIA}
    held["null"] = os.open("/dev/null", os.O_RDWR)  # a character device, but not NVIDIA's
    held["file"] = os.open(isolate.__file__, os.O_RDONLY)
    held["directory"] = os.open("/", os.O_RDONLY | os.O_DIRECTORY)  # a way out of any root
    ours, theirs = socket.socketpair()
    held["socket"] = ours.detach()
    theirs.detach()
    held["pipe_read"], held["pipe_write"] = os.pipe()  # both ends here
    held["half_pipe"], other_end = os.pipe()
    os.close(other_end)  # one end only: what is at the other end is not ours to vouch for
    held["eventfd"] = os.eventfd(0)
    held["memfd"] = os.memfd_create("cuda")
    identity = {name: (os.fstat(fd).st_dev, os.fstat(fd).st_ino) for name, fd in held.items()}
    if not threads_first:
        thread.start()
        started.wait()
    limits = isolate.Limits(
        time_limit=10,
        memory_mb=256,
        address_space=False,
        gpu_devices=True,
        cgroup_memory=None,
        uid=isolate.sandbox_uid(os.getpid(), 0),
    )
    try:
        isolate.isolate(limits, root, namespaces_entered=not threads_first)
    except RuntimeError as error:
        print(json.dumps({"refused": str(error)}), flush=True)
        return

    def same(name: str) -> bool:
        try:
            info = os.fstat(held[name])
        except OSError:
            return False
        return (info.st_dev, info.st_ino) == identity[name]

    def status(field: str) -> str:
        with open(f"/proc/self/task/{tid[0]}/status") as f:
            return next(line.split()[1] for line in f if line.startswith(field + ":"))

    def namespace(kind: str) -> bool:
        own = os.readlink(f"/proc/self/ns/{kind}")
        return os.readlink(f"/proc/self/task/{tid[0]}/ns/{kind}") == own

    try:
        fd = os.open("/dev/nvidiactl", os.O_RDWR)  # the driver opens one per memory mapping
        os.close(fd)
        opens = True
    except OSError:
        opens = False
    report = {
        "kept": sorted(name for name in held if same(name)),
        "dev": sorted(os.listdir("/dev")),
        "opens_nvidiactl": opens,
        "uid": os.getuid(),
        "root": sorted(os.listdir("/")),
        "thread_root": sorted(os.listdir(f"/proc/self/task/{tid[0]}/root")),
        "thread_cwd": os.readlink(f"/proc/self/task/{tid[0]}/cwd"),
        "thread_seccomp": status("Seccomp"),
        "thread_no_new_privs": status("NoNewPrivs"),
        "thread_namespaces": {kind: namespace(kind) for kind in ("mnt", "net", "ipc", "uts")},
    }
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
    os._exit(0)
