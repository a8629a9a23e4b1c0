"""Mutation testing of an exercise: scoring its mutants and the ratchet (issue 23).

Standard library only (the Django side's verify_bank drives it; grading goes through
practice/grader_client.py). A mutant is *killed* when its verdict is anything but "passed",
*waived* when exercise.yaml's ``mutant_waivers`` names it (an equivalent mutant, with the reason),
and *survives* otherwise. The **baseline** (``fixtures/bank/mutants-baseline.txt``) lists the
survivors not killed yet, one ``<slug> <mutant id>`` a line: a survivor outside it fails
verification, and so does a baseline line that no longer survives, so the file can only shrink.
The issue that asked for this is done when it is empty.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BASELINE_NAME = "mutants-baseline.txt"
INERT = "inert"  # the status of a mutant whose probe passed every check
# Grader files whose change can turn a cached kill into a survivor: part of every cache key.
_GRADER_FILES = ("compare.py", "gen.py", "runner.py", "verdict.py", "mutate.py", "frames.py")


@dataclass
class Score:
    slug: str
    generated: int = 0
    killed: list[str] = field(default_factory=list)
    waived: list[str] = field(default_factory=list)
    survived: list[str] = field(default_factory=list)
    # float32 / detach-added mutants whose probe passed: no check gives the function a float
    # tensor (returns one), so the mutant never acts and is the reference (mutate.Mutant.probe).
    inert: list[str] = field(default_factory=list)
    cached: int = 0  # kills (and inert mutants) read from the cache instead of graded

    def line(self) -> str:
        inert = f", {len(self.inert)} inert (never act in a check)" if self.inert else ""
        return (
            f"{self.slug}: mutants {self.generated} generated, {len(self.killed)} killed, "
            f"{len(self.waived)} waived, {len(self.survived)} survived{inert}"
            f" ({self.cached} from the cache)"
        )


def score(
    slug: str,
    results: Mapping[str, str],
    waivers: Mapping[str, str],
    *,
    cached: int = 0,
) -> Score:
    """``results``: mutant id -> verdict status, or INERT for a mutant whose probe passed."""
    out = Score(slug=slug, generated=len(results), cached=cached)
    for mutant_id, status in sorted(results.items()):
        if status == INERT:
            out.inert.append(mutant_id)
        elif status != "passed":
            out.killed.append(mutant_id)
        elif mutant_id in waivers:
            out.waived.append(mutant_id)
        else:
            out.survived.append(mutant_id)
    return out


def read_baseline(path: Path) -> set[tuple[str, str]]:
    if not path.is_file():
        return set()
    entries = set()
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            slug, _, mutant_id = line.partition(" ")
            entries.add((slug, mutant_id.strip()))
    return entries


def format_baseline(entries: Iterable[tuple[str, str]]) -> str:
    header = (
        "# Mutants that still survive their exercise's checks (issue 23): `<slug> <mutant id>`.\n"
        "# verify_bank fails on a survivor not listed here and on a line that no longer\n"
        "# survives, so this list only shrinks. Kill a mutant with a better check, or waive it\n"
        "# in exercise.yaml (mutant_waivers) when it is equivalent; then delete its line.\n"
    )
    return header + "".join(f"{slug} {mutant_id}\n" for slug, mutant_id in sorted(entries))


def ratchet_problems(
    scores: Iterable[Score], baseline: set[tuple[str, str]], *, all_mutants: Mapping[str, set[str]]
) -> dict[str, list[str]]:
    """Per slug, why its mutation run fails: an unwaived survivor outside the baseline, or a
    baseline entry (of a slug that was run) that no longer survives. ``all_mutants``: per slug
    run, the ids generated."""
    problems: dict[str, list[str]] = {}
    for result in scores:
        survivors = set(result.survived)
        listed = {m for slug, m in baseline if slug == result.slug}
        for mutant_id in sorted(survivors - listed):
            problems.setdefault(result.slug, []).append(
                f"mutant {mutant_id} survives every check: kill it with a check, or waive it in "
                f"exercise.yaml if it is equivalent"
            )
        for mutant_id in sorted(listed - survivors):
            why = (
                "is killed or waived now"
                if mutant_id in all_mutants.get(result.slug, set())
                else "is no longer generated"
            )
            problems.setdefault(result.slug, []).append(
                f"{BASELINE_NAME} lists mutant {mutant_id}, which {why}: delete its line"
            )
    return problems


def cache_key(mutant_source: str, job: Mapping[str, Any], *, timed: bool = False) -> str:
    """The content hash a kill is cached under: the mutant, everything of the job that decides
    its verdict, and the grader files that compare and generate.

    ``timed``: the key of a kill by the time limit, which holds only under that limit. The limit
    is fitted to the reference's time as measured in the run (limits.fitted_time_limit), so it
    moves between machines and with their load; every other kill (a wrong value, an error, the
    memory limit) and an inert mutant are settled by the content alone and keyed without it, so
    the ledger holds wherever it is read."""
    material = [
        mutant_source,
        job.get("reference"),
        job.get("checks"),
        job.get("forbid"),
        job.get("time_limit") if timed else None,
        _grader_sources(),
    ]
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


@functools.cache
def _grader_sources() -> tuple[str, ...]:
    """The texts of _GRADER_FILES, read once a process (every mutant's key holds them)."""
    here = Path(__file__).resolve().parent
    return tuple((here / name).read_text(encoding="utf-8") for name in _GRADER_FILES)


TIMED_OUT = "timed_out"  # the one verdict that depends on the time limit (grader/verdict.py)


class KillCache:
    """Kills by content hash, one empty file each (only kills and inert mutants, both settled
    by the content alone: a survivor is always regraded)."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder

    def killed(self, key: str) -> bool:
        return self.folder is not None and (self.folder / key).is_file()

    def inert(self, key: str) -> bool:
        return self.folder is not None and (self.folder / f"{key}.inert").is_file()

    def record(self, key: str, *, inert: bool = False) -> None:
        if self.folder is not None:
            self.folder.mkdir(parents=True, exist_ok=True)
            (self.folder / (f"{key}.inert" if inert else key)).touch()


LEDGER_NAME = "mutants-killed.txt"


class KillLedger(KillCache):
    """The kill cache CI starts from: a committed file of content hashes, one a line (an inert
    mutant's marked so), written by a full run (``verify_bank --write-ledger``), beside the local
    cache folder.

    A key in the ledger names a mutant that was killed (or found inert) when graded with exactly
    this reference, these checks and these grader files, so a clean clone grades only the mutants
    whose content changed. So that the ledger is proved again over time and not only trusted,
    ``sample`` of its keys (chosen from ``seed``: CI passes the day, so the tenth regraded
    rotates) are graded anyway; a sampled kill that now survives fails like any other survivor.
    """

    def __init__(
        self, folder: Path | None, ledger: Path | None, *, sample: float = 0.0, seed: str = ""
    ) -> None:
        super().__init__(folder)
        self.ledger = ledger
        self.known = read_ledger(ledger) if ledger is not None else {}
        self.sample = sample
        self.seed = seed
        self.confirmed: dict[str, bool] = {}  # key -> inert, for this run: cached, ledgered, graded
        self.from_ledger = 0
        self.sampled = 0

    def sampled_out(self, key: str) -> bool:
        digest = hashlib.sha256(f"{self.seed}:{key}".encode()).digest()
        return int.from_bytes(digest[:8], "big") < self.sample * 2**64

    def _known(self, key: str, *, inert: bool) -> bool | None:
        """True or False from the ledger (None: the ledger does not know it, or the sample
        chose it to be graded again)."""
        if self.known.get(key) is not inert:
            return None
        if self.sampled_out(key):
            self.sampled += 1
            return False
        self.from_ledger += 1
        self.confirmed[key] = inert
        return True

    def killed(self, key: str) -> bool:
        known = self._known(key, inert=False)
        if known is not None:
            return known
        if super().killed(key):
            self.confirmed[key] = False
            return True
        return False

    def inert(self, key: str) -> bool:
        known = self._known(key, inert=True)
        if known is not None:
            return known
        if super().inert(key):
            self.confirmed[key] = True
            return True
        return False

    def record(self, key: str, *, inert: bool = False) -> None:
        super().record(key, inert=inert)
        self.confirmed[key] = inert

    def write(self, *, replace: bool) -> int:
        """Write the kills of this run into the ledger: all of it after a run over the whole bank
        (``replace``), added to what is there after a partial one. Returns the keys written."""
        assert self.ledger is not None
        keys = self.confirmed if replace else {**self.known, **self.confirmed}
        self.ledger.write_text(format_ledger(keys), encoding="utf-8")
        return len(keys)


def read_ledger(path: Path) -> dict[str, bool]:
    """key -> whether the mutant is inert (False: killed)."""
    if not path.is_file():
        return {}
    entries = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        key, _, mark = raw.split("#", 1)[0].strip().partition(" ")
        if key:
            entries[key] = mark.strip() == "inert"
    return entries


def format_ledger(keys: Mapping[str, bool] | Iterable[str]) -> str:
    header = (
        "# Mutants killed (or inert: never acting in a check), by content hash\n"
        "# (grader/mutation.py cache_key): written by `manage.py verify_bank --write-ledger`\n"
        "# after a run over the whole bank. CI grades only the mutants whose hash is not here,\n"
        "# plus a rotating sample of those that are.\n"
    )
    entries = keys if isinstance(keys, Mapping) else dict.fromkeys(keys, False)
    return header + "".join(
        f"{key} inert\n" if inert else f"{key}\n" for key, inert in sorted(entries.items())
    )
