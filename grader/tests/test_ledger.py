"""The committed kill ledger that lets a clean clone (CI) skip mutants graded before."""

import hashlib

from grader import mutation


def keys(n: int) -> list[str]:
    return [hashlib.sha256(str(i).encode()).hexdigest() for i in range(n)]


def ledger_of(tmp_path, known, **kwargs):
    path = tmp_path / "killed.txt"
    path.write_text(mutation.format_ledger(known), encoding="utf-8")
    return mutation.KillLedger(None, path, **kwargs)


def test_a_ledgered_kill_is_not_graded_again_and_anything_else_is(tmp_path):
    known = keys(3)
    ledger = ledger_of(tmp_path, known)
    assert all(ledger.killed(key) for key in known)
    assert not ledger.killed(keys(4)[3])
    assert (ledger.from_ledger, ledger.sampled) == (3, 0)


def test_the_sample_regrades_a_share_of_the_ledger_that_rotates_with_the_seed(tmp_path):
    known = keys(2000)
    monday = ledger_of(tmp_path, known, sample=0.1, seed="2026-11-30")
    regraded_monday = {key for key in known if not monday.killed(key)}
    assert 120 < len(regraded_monday) < 280 and monday.sampled == len(regraded_monday)
    tuesday = ledger_of(tmp_path, known, sample=0.1, seed="2026-12-01")
    regraded_tuesday = {key for key in known if not tuesday.killed(key)}
    assert regraded_tuesday != regraded_monday
    # The same seed chooses the same sample: a failing run can be repeated.
    again = ledger_of(tmp_path, known, sample=0.1, seed="2026-11-30")
    assert {key for key in known if not again.killed(key)} == regraded_monday
    everything = ledger_of(tmp_path, known, sample=1.0)
    assert not any(everything.killed(key) for key in known)


def test_a_full_run_writes_exactly_its_kills_and_a_partial_run_adds_to_the_ledger(tmp_path):
    old, new = keys(6)[:3], keys(6)[3:]
    ledger = ledger_of(tmp_path, old)
    ledger.killed(old[0])  # still generated and still killed: stays
    ledger.record(new[0])  # graded now and killed
    assert ledger.write(replace=True) == 2
    assert mutation.read_ledger(ledger.ledger) == {old[0]: False, new[0]: False}

    partial = ledger_of(tmp_path, old)
    partial.record(new[1])
    assert partial.write(replace=False) == 4
    assert set(mutation.read_ledger(partial.ledger)) == {*old, new[1]}


def test_a_kill_from_the_local_cache_counts_and_is_written(tmp_path):
    cache = mutation.KillLedger(tmp_path / "cache", tmp_path / "killed.txt")
    key = keys(1)[0]
    mutation.KillCache(tmp_path / "cache").record(key)
    assert cache.killed(key) and cache.from_ledger == 0
    cache.write(replace=True)
    assert mutation.read_ledger(tmp_path / "killed.txt") == {key: False}


def test_an_inert_mutant_is_ledgered_as_inert_and_read_back_as_inert_only(tmp_path):
    killed, inert = keys(2)
    cache = mutation.KillLedger(None, tmp_path / "killed.txt")
    cache.record(killed)
    cache.record(inert, inert=True)
    cache.write(replace=True)
    assert "inert" in (tmp_path / "killed.txt").read_text()
    again = mutation.KillLedger(None, tmp_path / "killed.txt")
    assert again.killed(killed) and not again.inert(killed)
    assert again.inert(inert) and not again.killed(inert)
