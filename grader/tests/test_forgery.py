"""Forged passes through trusted check code (issue 24, findings 1 and 3).

Check code calls the learner's names. A submission that binds those names to the forbidden
functions themselves made the check call them; one that found the originals (``_KEEP``) or
compiled an untrapped copy from torch's own source got past the traps as well. Each test grades a
real exercise of the bank with a forgery that needs no solution and asserts it is rejected.
"""

from __future__ import annotations

import textwrap

from grader import exercise
from grader.tests.helpers import REPO, assert_still_grading, probe_job

BANK = REPO / "fixtures" / "bank"


def bank_job(slug: str, code: str) -> dict:
    return {**exercise.load(BANK / slug), "code": textwrap.dedent(code)}


def assert_rejected(result: dict, rule: str) -> None:
    assert result["status"] == "rejected", result
    assert "called what this exercise forbids" in result["message"], result["message"]
    assert rule in result["message"], result["message"]


def test_names_bound_to_forbidden_functions_are_the_learners_calls(pool):
    # Four lines passed all 11 checks on main: the check called F.cross_entropy through the
    # learner's name, and the trap trusted its direct caller, the check.
    four_lines = """
    import torch
    F = getattr(torch.nn, "func" + "tional")
    log_softmax = getattr(F, "log_" + "softmax")
    cross_entropy = getattr(F, "cross_" + "entropy")
    """
    result = pool.grade(bank_job("stable-softmax-cross-entropy", four_lines))
    assert_rejected(result, "F.")
    # One alias and the mask helper passed all 18 checks of scaled-dot-product-attention.
    alias = """
    import torch
    sdpa = getattr(torch.nn.functional, "scaled_dot_" + "product_attention")

    def padding_causal_mask(lengths, L):
        positions = torch.arange(L, device=lengths.device)
        causal = positions[None, :] <= positions[:, None]
        real_key = positions[None, :] < lengths[:, None]
        return causal[None, None, :, :] & real_key[:, None, None, :]
    """
    result = pool.grade(bank_job("scaled-dot-product-attention", alias))
    assert_rejected(result, "F.scaled_dot_product_attention")
    assert_still_grading(pool)


def test_a_wrapper_of_a_forbidden_function_is_the_learners_call(pool):
    # A C-level wrapper (functools.partial) leaves no learner frame between the check and the
    # trap; torch.vmap, a torch helper written in Python, calls what the learner handed it.
    partial = """
    import functools, torch
    F = getattr(torch.nn, "func" + "tional")
    log_softmax = functools.partial(getattr(F, "log_" + "softmax"), dim=-1)
    cross_entropy = functools.partial(getattr(F, "cross_" + "entropy"))
    """
    result = pool.grade(bank_job("stable-softmax-cross-entropy", partial))
    assert_rejected(result, "F.")
    handed = """
    import torch
    def probe():
        f = getattr(torch.nn.functional, "scaled_dot_" + "product_attention")
        q = torch.ones(3, 1, 2, 4)
        torch.vmap(f)(q, q, q)
        return "blocked"
    """
    job = {**probe_job(handed), "forbid": ["F.scaled_dot_product_attention"]}
    assert_rejected(pool.grade(job), "F.scaled_dot_product_attention")


def test_the_originals_are_not_kept_where_a_submission_can_import_them(pool):
    # grader.traps._KEEP held every replaced original behind a plain import: 18 of 18.
    keep = """
    import importlib
    _originals = {
        getattr(f, "__name__", ""): f
        for f in getattr(importlib.import_module("grader.traps"), "_KEEP", [])
    }
    def _shape(shape):
        return (shape,) if isinstance(shape, int) else tuple(shape)
    def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
        return _originals["layer_norm"](x, _shape(normalized_shape), weight, bias, eps)
    def rms_norm(x, normalized_shape, weight=None, eps=None):
        return _originals["rms_norm"](x, _shape(normalized_shape), weight, eps)
    """
    result = pool.grade(bank_job("layernorm-and-rmsnorm", keep))
    assert result["status"] != "passed", result
    probe = """
    import importlib
    def probe():
        return str(getattr(importlib.import_module("grader.traps"), "_KEEP", "blocked"))[:80]
    """
    job = {**probe_job(probe), "forbid": ["F.layer_norm"]}
    assert pool.grade(job)["status"] == "passed"


# The two functions' definitions from torch's own source, compiled under torch's file name and
# lines into a copy of the module's namespace: untrapped copies.
COPY = """
    import ast, torch
    F = getattr(torch.nn, "func" + "tional")
    _tree = ast.parse(F.__loader__.get_source(F.__name__))
    _tree.body = [
        node for node in _tree.body
        if isinstance(node, ast.FunctionDef) and node.name in ("layer_" + "norm", "rms_" + "norm")
    ]
    _ns = dict(vars(F))
    exec(compile(_tree, F.__file__, "exec"), _ns)
"""


def test_a_copy_compiled_from_torchs_own_source_is_still_caught(pool):
    # The module's loader gives torch's source; compiled under torch's file name, the copy's
    # inner calls came from a file the trap trusted: 18 of 18 on main.
    # Wrapped by the learner (the contract takes an int shape, torch's function a list).
    wrapped = (
        COPY
        + """
    def _shape(shape):
        return (shape,) if isinstance(shape, int) else tuple(shape)
    def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
        return _ns["layer_" + "norm"](x, _shape(normalized_shape), weight, bias, eps)
    def rms_norm(x, normalized_shape, weight=None, eps=None):
        return _ns["rms_" + "norm"](x, _shape(normalized_shape), weight, eps)
    """
    )
    result = pool.grade(bank_job("layernorm-and-rmsnorm", wrapped))
    assert_rejected(result, "_norm")
    # The copy bound to the learner's name and called by the check itself.
    bound = (
        COPY
        + """
    layer_norm = _ns["layer_" + "norm"]
    rms_norm = _ns["rms_" + "norm"]
    """
    )
    result = pool.grade(bank_job("layernorm-and-rmsnorm", bound))
    assert_rejected(result, "_norm")
    assert_still_grading(pool)


def test_check_code_keeps_its_own_handles_to_what_the_learner_may_not_call(pool):
    # The bank's checks build forbidden classes and call forbidden functions as oracles; those
    # calls go through handles bound before the submission loaded, and still pass.
    solution = (BANK / "transformer-encoder-layer" / "solution.py").read_text()
    result = pool.grade(bank_job("transformer-encoder-layer", solution))
    assert result["status"] == "passed", result
    # A learner calling the handle a check holds is still the learner's call.
    stolen = """
    import sys
    def probe():
        handles = [v for k, v in sys._getframe(1).f_globals.items() if k.startswith("__")]
        for handle in handles:
            if callable(handle):
                try:
                    handle(torch.ones(1, 2, 4), torch.ones(1, 2, 4), torch.ones(1, 2, 4))
                except TypeError:
                    pass
        return "blocked"
    import torch
    """
    check = (
        "q = torch.ones(1, 2, 4)\n"
        "torch.nn.functional.scaled_dot_product_attention(q, q, q)\n"
        "out = probe()"
    )
    job = {**probe_job(stolen), "forbid": ["F.scaled_dot_product_attention"]}
    job["checks"][0]["code"] = check
    assert_rejected(pool.grade(job), "F.scaled_dot_product_attention")


# Torch's own helpers called from a module of the learner's making, its code compiled under a
# file name in the standard library's folder and registered in sys.modules: the trap took its
# frames for the standard library's, and all 15 checks passed (stop 42's red team).
FAKE_LIBRARY = """
    import os, sys, types, torch
    _SOURCE = "\\n".join([
        "import torch.nn.utils as U",
        "def total(grads, norm_type): return U.get_total_norm(grads, norm_type)",
        "def scale(params, limit, total): return U.clip_grads_with_norm_(params, limit, total)",
        "def value(params, limit): return U.clip_grad_value_(params, limit)",
    ])
    _mod = types.ModuleType("zz_helpers")
    sys.modules["zz_helpers"] = _mod
    _name = os.path.join(os.path.dirname(os.__file__), "zz_helpers.py")
    COMPILE
    exec(_code, _mod.__dict__)
    _total, _scale, _value = _mod.total, _mod.scale, _mod.value
"""

# The exercise's three functions on top of torch's helpers (_total, _scale and _value, bound by
# the prelude each forgery puts before this).
CLIPPING = """
    def clip_grad_norm(parameters, max_norm, norm_type=2.0):
        parameters = [parameters] if isinstance(parameters, torch.Tensor) else list(parameters)
        grads = [p.grad for p in parameters if p.grad is not None]
        if not grads:
            return torch.tensor(0.0)
        total = _total(grads, norm_type)
        _scale(parameters, max_norm, total)
        return total

    def clip_grad_value(parameters, clip_value):
        _value(parameters, clip_value)

    def train_step(model, optimizer, loss_fn, x, y, max_norm):
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        norm = clip_grad_norm(model.parameters(), max_norm)
        optimizer.step()
        return loss.item(), norm.item()
"""


def test_code_made_to_pass_for_a_library_module_is_not_the_librarys(pool):
    direct = FAKE_LIBRARY.replace("COMPILE", '_code = compile(_SOURCE, _name, "exec")') + CLIPPING
    result = pool.grade(bank_job("gradient-clipping", direct))
    assert result["status"] == "error", result
    assert "ForgedLibraryCode" in result["message"], result["message"]
    # Compiled by the standard library's own code (a pool's worker), the compile is not refused,
    # but the module is still not one loaded before the submission, nor its file's code.
    by_a_thread = (
        FAKE_LIBRARY.replace(
            "COMPILE",
            "from concurrent.futures import ThreadPoolExecutor\n"
            "    _code = ThreadPoolExecutor(1).submit(compile, _SOURCE, _name, 'exec').result()",
        )
        + CLIPPING
    )
    result = pool.grade(bank_job("gradient-clipping", by_a_thread))
    assert_rejected(result, "nn.utils.")
    assert_still_grading(pool)


COPY_BY_LOADER = """
    import importlib, importlib.util, torch
    HOW
    _total, _scale = _mod._get_total_norm, _mod._clip_grads_with_norm_
    _value = _mod.clip_grad_value_
"""


def test_a_fresh_copy_of_a_forbidden_functions_module_is_the_call_itself(pool):
    # The module's loader run again gives functions no trap replaced, and they call nothing
    # trapped: all 15 checks passed (stop 42). Executing that file's code again is the call.
    loader = (
        '_spec = importlib.util.find_spec("torch.nn.utils.clip_grad")\n'
        "    _mod = importlib.util.module_from_spec(_spec)\n"
        "    _spec.loader.exec_module(_mod)"
    )
    copy = COPY_BY_LOADER + CLIPPING
    result = pool.grade(bank_job("gradient-clipping", copy.replace("HOW", loader)))
    assert_rejected(result, "nn.utils.")
    # A reload runs the file's code again in the module's own namespace, over the traps.
    reload = '_mod = importlib.reload(importlib.import_module("torch.nn.utils.clip_grad"))'
    result = pool.grade(bank_job("gradient-clipping", copy.replace("HOW", reload)))
    assert_rejected(result, "nn.utils.")
    assert_still_grading(pool)


def test_library_code_loaded_after_the_submission_started_is_still_library_code(pool):
    # Modules first imported while the checks run (torch imports lazily) are library code when
    # the import system loaded them from their own files: optparse, imported here for the first
    # time, calls the forbidden textwrap.fill for itself (its help formatter): not the learner's.
    code = """
    import sys
    def probe():
        if "optparse" in sys.modules:
            return "optparse was loaded before the submission: choose another module"
        import optparse
        optparse.OptionParser(description="one two three " * 20).format_help()
        return "blocked"
    """
    job = {**probe_job(code), "forbid": ["textwrap.fill"]}
    result = pool.grade(job)
    assert result["status"] == "passed", result
    # The same call made by the learner is the learner's.
    job["code"] = (
        "import textwrap\n"
        "def probe():\n    return getattr(textwrap, 'fi' + 'll')('a') and 'blocked'\n"
    )
    assert_rejected(pool.grade(job), "textwrap.fill")


def test_the_learners_code_cannot_make_code_that_passes_for_a_librarys(pool):
    # Each way to get a code object under a library's file name without compiling other source
    # under it, and ctypes, which could rewrite one: refused when the learner's code asks (ctypes
    # named plainly is refused before anything runs; memmove raises no audit event: Known limits).
    attempts = {
        "replace": "(lambda: 0).__code__.replace(co_filename=os.__file__)",
        "marshal": "marshal.loads(marshal.dumps((lambda: 0).__code__))",
        "ctypes": "ct.c_char.from_address(id(probe))",
    }
    for name, attempt in attempts.items():
        code = f"""
        import marshal, os, sys
        # Reached without its name (the static check refuses the name in such an exercise).
        ct = next(m for n, m in sys.modules.items() if n[:2] == "ct" and n[2:] == "ypes")
        def probe():
            try:
                {attempt}
            except Exception as error:
                return "blocked" if type(error).__name__ == "ForgedLibraryCode" else repr(error)
            return "not blocked"
        """
        job = {**probe_job(code), "forbid": ["F.layer_norm"]}
        result = pool.grade(job)
        assert result["status"] == "passed", (name, result)
    # A code object under the learner's own file name is still the learner's to make.
    code = """
    def probe():
        return (lambda: 0).__code__.replace(co_filename="mine.py") and "blocked"
    """
    assert pool.grade({**probe_job(code), "forbid": ["F.layer_norm"]})["status"] == "passed"
