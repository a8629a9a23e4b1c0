"""The zygote: one per grading slot, a fresh interpreter started by client.SandboxPool.

It imports and warms torch once, forks the fork server, and then answers requests read as JSON
lines from its stdin with JSON lines on its stdout, one at a time. It decides every verdict itself.
If anything goes wrong that it cannot vouch for (the fork server stops answering), it exits and the
client starts a new one; its children die with it (PDEATHSIG down the chain).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import stat
import sys
import tempfile
import traceback
from typing import IO, Any

from grader import jobs, linux, text
from grader.cgroups import Cgroups
from grader.pidns import InitSpawner

PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# A zygote whose resident memory grew this much past what it had when it said ready is replaced
# after its answer (issue 24, finding 2): what one run costs is budgeted (frames.py), but the
# allocator keeps freed memory, and caches of references and wrong solutions grow with use.
RECYCLE_GROWTH = 512 << 20


def resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _protocol_streams() -> tuple[IO[str], IO[str]]:
    """Move the request/response pipes off fds 0 and 1, so stray prints cannot corrupt them."""
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
    responses = os.fdopen(os.dup(1), "w", encoding="utf-8")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return requests, responses


def _warm_torch(kind: str) -> None:
    """Import and exercise what submissions use, with one thread, before anything forks.

    OpenMP hangs in a forked child if the parent ever ran a parallel region, so the thread count
    is set first. The first optimizer step imports torch._dynamo lazily (about a second); doing it
    here keeps it out of every child. A GPU slot's zygote only compares results (its runs are
    fresh interpreters), so it needs torch but none of the warming.
    """
    import torch

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    if kind != "cpu":
        return
    import torch._dynamo  # noqa: F401
    import torch.nn.functional as F
    import torch.utils.data  # noqa: F401

    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    for optimizer in (torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW):
        opt = optimizer(model.parameters(), lr=0.1)
        loss = F.cross_entropy(model(torch.randn(3, 4)), torch.tensor([0, 1, 0]))
        opt.zero_grad()
        loss.backward()
        opt.step()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kind", choices=("cpu", "gpu"), default="cpu")
    parser.add_argument("--no-prespawn", action="store_true")
    # The GPU slots' device list: "auto" uses CUDA where torch finds it; "none" is the fake, empty
    # list, so the single-use lifecycle runs on the CPU and checks that need CUDA are skipped.
    parser.add_argument("--devices", choices=("auto", "none"), default="auto")
    args = parser.parse_args(argv)

    requests, responses = _protocol_streams()
    linux.prctl(linux.PR_SET_CHILD_SUBREAPER, 1)
    inits = InitSpawner.start()  # first, while this process is small and cheap to fork
    _warm_torch(args.kind)
    # Imported after torch is warm; everything a child needs must be imported before the fork.
    from grader import grading, isolate, runner, seccomp, traps, verdict  # noqa: F401
    from grader.forkserver import ForkServer, hide_cuda
    from grader.supervise import Supervisor, SupervisorError

    isolate.mount_plan()
    seccomp.preload()
    traps.index()
    root = MountPoint()
    root.ensure()
    cgroups = Cgroups()
    if args.devices == "none":
        hide_cuda()
    server = ForkServer.start(inits)
    grader = grading.Grader(
        Supervisor(server, cgroups, PACKAGE_ROOT),
        kind=args.kind,
        root=root,
        prespawn=not args.no_prespawn,
        devices=args.devices,
    )

    def layers() -> dict[str, bool]:
        return {
            "cgroups": cgroups.active,
            "cpu": cgroups.cpu_active,
            "root": root.healthy,
            # Whether runs have a memory bound at all: a CPU slot's RLIMIT_AS (with memfds
            # refused and every tmpfs capped) holds without cgroups; a GPU slot has none then.
            "memory": cgroups.active or args.kind == "cpu",
        }

    hello = {
        "ready": True,
        "pid": os.getpid(),
        "layers": layers(),
        "cuda": grader.gpu,
        "cuda_detail": grader.cuda_detail,
        "root_dir": root.parent,
    }
    _send(responses, hello)
    baseline = resident_bytes()
    try:
        for line in requests:
            try:
                response = _answer(grader, json.loads(line))
            except (jobs.JobError, json.JSONDecodeError) as error:  # the caller's mistake
                response = {"invalid": str(error)}
            except SupervisorError:
                raise
            except grading.SandboxSetupFailed as error:
                print(f"sandbox setup failed: {error}", file=sys.stderr, flush=True)
                response = {"result": {**SANDBOX_FAILED, "grader_failed": True}}
            except Exception:  # a bug here must not take the slot down with a wrong verdict
                traceback.print_exc()
                message = "The grader failed internally; this is not a problem with your code."
                response = {"result": {**verdict.result("error", message), "grader_failed": True}}
            response = text.clean_all(response)  # sandbox text: no lone surrogate, no NUL
            response["layers"] = layers()
            response["root_dir"] = root.parent  # the client removes it if it has to kill us
            # The client replaces a zygote that says so, and this one exits after the answer.
            response["recycle"] = resident_bytes() - baseline > RECYCLE_GROWTH
            _send(responses, response)
            if response["recycle"]:
                print("zygote memory grew past its bound: exiting to be replaced", file=sys.stderr)
                break
            grader.supervisor.settle(waiting=requests.fileno())
            grader.refill()
    finally:
        root.remove()
        cgroups.close()


class MountPoint:
    """The empty directory each sandbox mounts its root on (in the child's own mount namespace).

    It lives in a private directory (0700, owned by this zygote) that no other zygote sweeps: one
    in another PID namespace cannot tell that this zygote is alive. A temp cleaner may still
    remove it, so ``ensure`` recreates it before every run, and if that fails the layer is reported
    through the pool's health (``layers["root"]``) rather than every job failing silently.
    """

    def __init__(self) -> None:
        self.parent = tempfile.mkdtemp(prefix=f"quizbank-zygote-{os.getpid()}-")
        self.path = os.path.join(self.parent, "root")
        self.healthy = True

    def _private(self, path: str) -> bool:
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return False
        return (
            stat.S_ISDIR(info.st_mode)
            and info.st_uid == os.geteuid()
            and stat.S_IMODE(info.st_mode) == 0o700
        )

    def ensure(self) -> str:
        """The mount point, recreated if something removed it; OSError if it cannot be."""
        try:
            if not self._private(self.parent):
                try:
                    os.mkdir(self.parent, 0o700)
                except FileExistsError:  # not ours any more (a planted path): start afresh
                    self.parent = tempfile.mkdtemp(prefix=f"quizbank-zygote-{os.getpid()}-")
                    self.path = os.path.join(self.parent, "root")
                os.chmod(self.parent, 0o700)
            if not os.path.isdir(self.path) or os.path.islink(self.path):
                os.mkdir(self.path, 0o755)
        except OSError:
            self.healthy = False
            raise
        self.healthy = True
        return self.path

    def remove(self) -> None:
        for path in (self.path, self.parent):
            with contextlib.suppress(OSError):
                os.rmdir(path)  # empty on the host: sandboxes mount over it in their own namespace


# What a job whose sandbox could not set itself up answers (marked so that the client tries it
# once more on a fresh zygote).
SANDBOX_FAILED = {
    "status": "error",
    "message": "The sandbox could not start; this is a problem in the grader, not your code.",
    "checks": [],
    "output": "",
    "duration_ms": 0,
    "skipped": 0,
    "sandbox_failed": True,
}


def _answer(grader: Any, request: Any) -> dict[str, Any]:
    op = request.get("op") if isinstance(request, dict) else None
    if op == "grade" and "job" in request:
        return {"result": grader.grade(request["job"])}
    if op == "snippets" and {"blocks", "time_limit"} <= request.keys():
        return {"result": grader.snippets(request["blocks"], request["time_limit"])}
    raise jobs.JobError(f"not a request: {str(request)[:80]}")


def _send(stream: IO[str], message: dict[str, Any]) -> None:
    stream.write(json.dumps(message) + "\n")
    stream.flush()


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:
        sys.exit(0)
