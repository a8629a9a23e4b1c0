"""Attack tests for issue 11's remaining findings: forbid rules enforced by a call trap (7), the
seccomp allow list, file watches and per-run uids (10), and hidden inputs drawn per run (5)."""

from __future__ import annotations

import re

import pytest

from grader import jobs
from grader.tests.helpers import assert_still_grading, code_job, probe_job
from grader.tests.test_attacks import assert_blocked


def test_file_watches_and_syscalls_newer_than_the_filter_are_refused(pool):
    # inotify on the read-only binds would show the host's opens of the libraries and the venv;
    # the rest are syscalls a deny list written before them let through (x86-64 numbers).
    result = pool.grade(
        probe_job("""
        import ctypes, errno
        libc = ctypes.CDLL(None, use_errno=True)
        buf = ctypes.create_string_buffer(256)
        CALLS = {"inotify_init": (253,), "inotify_init1": (294, 0),
                 "fanotify_init": (300, 0, 0), "modify_ldt": (154, 0, buf, 16),
                 "memfd_secret": (447, 0), "cachestat": (451, 0, buf, buf, 0),
                 "listmount": (458, buf, buf, 4, 0), "statmount": (457, buf, buf, 64, 0),
                 "open_tree_attr": (467, -100, b"/", 0, 0, 0), "mseal": (462, 0, 0, 0),
                 "pkey_alloc": (330, 0, 0), "landlock_create_ruleset": (444, 0, 0, 1)}
        def probe():
            allowed = []
            for name, (nr, *args) in CALLS.items():
                if libc.syscall(nr, *args) != -1:
                    allowed.append(f"{name} (ran)")
                elif ctypes.get_errno() not in (errno.EPERM, errno.ENOSYS):
                    allowed.append(f"{name} ({errno.errorcode.get(ctypes.get_errno())})")
            fd = libc.syscall(294, 0)
            if fd >= 0 and libc.syscall(254, fd, b"/usr/lib", 0x20) >= 0:
                allowed.append("a watch on /usr/lib")
            return ", ".join(allowed) or "blocked"
        """)
    )
    assert_blocked(result)
    assert_still_grading(pool)


def test_what_python_needs_still_works_under_the_allow_list(pool):
    # Threads, timers, files in /tmp, select on a pipe, getrandom, a thread name: the everyday
    # syscalls an allow list must not break (the bank's exercises and answer blocks are the rest).
    result = pool.grade(
        probe_job("""
        import os, random, selectors, shutil, signal, tempfile, threading, time
        def probe():
            out = []
            t = threading.Thread(target=lambda: out.append(1), name="worker")
            t.start(); t.join()
            timer = threading.Timer(0.01, lambda: out.append(2)); timer.start(); timer.join()
            signal.setitimer(signal.ITIMER_REAL, 0)
            with tempfile.TemporaryDirectory() as d:
                open(os.path.join(d, "a"), "w").write("x")
                shutil.copy2(os.path.join(d, "a"), os.path.join(d, "b"))
                os.rename(os.path.join(d, "b"), os.path.join(d, "c"))
                out.append(sorted(os.listdir(d)))
            r, w = os.pipe(); os.write(w, b"x")
            sel = selectors.DefaultSelector(); sel.register(r, selectors.EVENT_READ)
            out.append(len(sel.select(1)))
            out.append(len(os.urandom(8)) + len(random.SystemRandom().randbytes(2)))
            time.sleep(0.001)
            return "blocked" if out == [1, 2, ["a", "c"], 1, 10] else repr(out)
        """)
    )
    assert_blocked(result)


UID_PROBE = """
import os
print("uid", os.getuid(), os.getgid(), os.stat("/sandbox").st_uid)
def probe():
    return "blocked"
"""


def test_each_run_has_its_own_uid(pool):
    # RLIMIT_NPROC counts per uid: a shared uid let one run's threads starve the next run's.
    seen = []
    for _ in range(6):
        result = pool.grade(code_job(UID_PROBE))
        assert result["status"] == "passed", result
        uid, gid, owner = map(int, re.search(r"uid (\d+) (\d+) (\d+)", result["output"]).groups())
        assert uid == gid == owner
        assert uid not in (0, 65534)
        seen.append(uid)
    # Consecutive runs of one zygote take the next uid of its pool; zygotes' pools are disjoint.
    assert len(set(seen)) == len(seen), seen


def forbid_job(body: str, rules: list[str], check: str = "out = probe()") -> dict:
    """A probe job with forbid rules: the submission's probe() makes a forbidden call in a way
    the syntax tree does not show, then returns "blocked" (what the reference returns)."""
    job = probe_job(body)
    job["forbid"] = rules
    job["checks"][0]["code"] = check
    return job


def assert_rejected(result: dict, rule: str) -> None:
    assert result["status"] == "rejected", result
    assert "called what this exercise forbids" in result["message"], result["message"]
    assert rule in result["message"], result["message"]


SDPA = ["F.scaled_dot_product_attention"]
QKV = "q = k = v = torch.ones(1, 2, 4)\n"


def test_a_forbidden_tensor_method_is_caught_at_run_time(pool):
    code = """
    import torch
    def probe():
        x = torch.arange(6.0)
        getattr(x, "as_" + "strided")((2, 2), (1, 2))
        return "blocked"
    """
    assert_rejected(pool.grade(forbid_job(code, ["torch.as_strided"])), "torch.as_strided")
    assert_still_grading(pool)


def test_a_forbidden_function_from_its_defining_submodule_is_caught(pool):
    code = """
    import torch
    from torch.nn.utils.clip_grad import clip_grad_norm_
    def probe():
        p = torch.nn.Parameter(torch.ones(2)); p.grad = torch.ones(2)
        clip_grad_norm_([p], 1.0)
        return "blocked"
    """
    rule = "nn.utils.clip_grad_norm_"
    assert_rejected(pool.grade(forbid_job(code, [rule])), rule)


def test_an_alias_the_syntax_tree_cannot_follow_is_caught(pool):
    # `t = torch` is followed statically now; an alias through a container is not.
    code = (
        """
    import torch
    t = [torch][0]
    def probe():
        """
        + QKV
        + """
        t.nn.functional.scaled_dot_product_attention(q, k, v)
        return "blocked"
    """
    )
    assert_rejected(pool.grade(forbid_job(code, SDPA)), SDPA[0])
    plain = "import torch\nt = torch\ndef probe():\n    return t.as_strided\n"
    result = pool.grade(forbid_job(plain, ["torch.as_strided"]))
    assert result["status"] == "rejected" and "line 4" in result["message"], result


def test_torch_private_bindings_are_refused_and_trapped(pool):
    direct = "import torch\ndef probe():\n    return torch._C._nn.scaled_dot_product_attention\n"
    result = pool.grade(forbid_job(direct, SDPA))
    assert result["status"] == "rejected" and "torch._C" in result["message"], result
    hidden = (
        """
    import torch
    nn_bindings = getattr(getattr(torch, "_" + "C"), "_" + "nn")
    def probe():
        """
        + QKV
        + """
        nn_bindings.scaled_dot_product_attention(q, k, v)
        return "blocked"
    """
    )
    assert_rejected(pool.grade(forbid_job(hidden, SDPA)), SDPA[0])


def test_a_thin_wrappers_binding_and_a_forbidden_class_are_caught(pool):
    # F.layer_norm is a thin wrapper over torch.layer_norm; a forbidden class is caught however
    # it is reached, including through a subclass.
    binding = """
    import torch
    def probe():
        getattr(torch, "layer" + "_norm")(torch.ones(2, 3), (3,))
        return "blocked"
    """
    assert_rejected(pool.grade(forbid_job(binding, ["F.layer_norm"])), "F.layer_norm")
    subclass = """
    import torch
    Base = getattr(torch.nn, "Multihead" + "Attention")
    class Mine(Base):
        pass
    def probe():
        Mine(4, 2)
        return "blocked"
    """
    rule = "nn.MultiheadAttention"
    assert_rejected(pool.grade(forbid_job(subclass, [rule])), rule)


def test_a_forbidden_class_built_without_its_init_is_caught(pool):
    # cls.__new__ skips the trapped __init__, and nn.Module.__call__ (torch's own code, a trusted
    # caller) then ran the real forward: a full layernorm exercise passed this way.
    code = """
    import torch
    def probe():
        cls = getattr(torch.nn, "Layer" + "Norm")
        m = cls.__new__(cls)
        torch.nn.Module.__init__(m)
        m.normalized_shape, m.weight, m.bias, m.eps = (3,), None, None, 1e-5
        m(torch.ones(2, 3))
        return "blocked"
    """
    rule = "nn.LayerNorm"
    assert_rejected(pool.grade(forbid_job(code, [rule])), rule)
    # Check code (trusted) still builds and calls the class normally.
    trusted = "torch.nn.LayerNorm(3)(torch.ones(2, 3)); out = probe()"
    plain = """
    def probe():
        return "blocked"
    """
    assert pool.grade(forbid_job(plain, [rule], check=trusted))["status"] == "passed"


def test_a_forbidden_tensor_method_reached_through_super_is_caught(pool):
    # TensorBase, a C type that refuses setattr, kept the original; super() reaches it without
    # naming torch._C.
    code = """
    import torch
    def probe():
        y = super(torch.Tensor, torch.arange(6.0)).as_strided((2, 2), (1, 1))
        return "got " + str(y.tolist())
    """
    assert_rejected(pool.grade(forbid_job(code, ["torch.as_strided"])), "torch.as_strided")
    # torch calling it for itself, and check code, still pass through.
    trusted = "torch.arange(6.0).as_strided((2, 2), (1, 1)); out = probe()"
    plain = """
    def probe():
        return "blocked"
    """
    result = pool.grade(forbid_job(plain, ["torch.as_strided"], check=trusted))
    assert result["status"] == "passed", result


def test_catching_the_traps_exception_does_not_hide_the_call(pool):
    code = (
        """
    import torch
    F = __import__("torch").nn.functional
    sdpa = getattr(F, "scaled_dot_" + "product_attention")
    def probe():
        """
        + QKV
        + """
        try:
            sdpa(q, k, v)
        except BaseException:
            pass
        return "blocked"
    """
    )
    assert_rejected(pool.grade(forbid_job(code, SDPA)), SDPA[0])


def test_tampering_with_the_trap_report_is_never_a_pass(pool):
    # A forged "armed" frame (claiming no rule is trapped) after the code starts, and a closed
    # result channel: neither may turn a run into a pass.
    forged = """
    import struct
    payload = b"d" + struct.pack(">I", 2) + b"s" + struct.pack(">I", 4) + b"kind"
    payload += b"s" + struct.pack(">I", 5) + b"armed" + b"s" + struct.pack(">I", 5) + b"rules"
    payload += b"l" + struct.pack(">I", 0)
    import os
    os.write(3, struct.pack(">I", len(payload)) + payload)
    def probe():
        return "blocked"
    """
    result = pool.grade(forbid_job(forged, SDPA))
    assert result["status"] == "error", result
    closed = "import os\nos.close(3)\ndef probe():\n    return 'blocked'\n"
    result = pool.grade(forbid_job(closed, SDPA))
    assert result["status"] == "error", result
    assert_still_grading(pool)


def test_check_code_and_torch_itself_may_use_what_the_learner_may_not(pool):
    # The trap counts the submission's calls only: here the check calls the forbidden function
    # (and the reference is never trapped).
    code = """
    import torch
    def probe():
        return "blocked"
    """
    check = QKV + "torch.nn.functional.scaled_dot_product_attention(q, k, v)\nout = probe()"
    result = pool.grade(forbid_job(code, SDPA, check=check))
    assert result["status"] == "passed", result
    # F.mse_loss calls torch.broadcast_tensors for itself: the learner did not call it.
    mse = """
    import torch
    def probe():
        torch.nn.functional.mse_loss(torch.ones(3), torch.zeros(3))
        return "blocked"
    """
    result = pool.grade(forbid_job(mse, ["torch.broadcast_tensors"]))
    assert result["status"] == "passed", result


def seeded_job(code: str) -> dict:
    return {
        "code": code,
        "reference": "def double(x):\n    return x * 2\n",
        "checks": [
            {
                "name": "hidden, random input",
                "seed": "per-run",
                "code": "x = torch.randn(4)\nout = double(x)",
                "compare": "out",
            }
        ],
    }


def test_values_extracted_from_a_per_run_seeded_check_do_not_replay(pool):
    # The attack: learn a hidden check's input (or expected value) from one run, then
    # submit code that only returns the hard-coded answer. With `seed: per-run` the grader
    # draws the inputs; the answer stops passing as soon as the seed changes.
    spy = "def double(x):\n    print('x=', x.tolist())\n    return x * 2\n"
    first = pool.grade(seeded_job(spy))
    assert first["status"] == "passed", first
    values = re.search(r"x= (\[[^\]]*\])", first["output"]).group(1)
    replay = f"import torch\ndef double(x):\n    return torch.tensor({values}) * 2\n"
    statuses = [pool.grade(seeded_job(replay))["status"] for _ in range(20)]
    assert "failed" in statuses, statuses
    honest = [pool.grade(seeded_job(spy)) for _ in range(4)]
    assert all(r["status"] == "passed" for r in honest), honest


def test_a_seed_setting_other_than_per_run_is_refused():
    job = seeded_job("def double(x):\n    return x * 2\n")
    job["checks"][0]["seed"] = 1234  # a fixed seed chosen by the exercise is what we replace
    with pytest.raises(jobs.JobError, match=r"checks\[0\]\.seed must be 'per-run'"):
        jobs.normalize_job(job)
