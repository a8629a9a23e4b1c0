"""How long the first grade takes after the site starts, as `make run` starts it (issue 29).

The embedded defaults (SQLite, no broker: grading in the web process) in a scratch folder: the bank
loaded, a learner with an API token, then `manage.py runserver` started and a submission POSTed the
moment the server answers. Prints, side by side in one run: the server's start (first answer), the
first submission's verdict (sent at once: it waits for the sandbox the server starts as it starts),
and the next ones (a warm sandbox).

    .venv/bin/python bench/first_grade.py [--next 5]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON = str(ROOT / ".venv" / "bin" / "python")
CODE = (ROOT / "fixtures" / "bank" / "stable-softmax-cross-entropy" / "solution.py").read_text()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [PYTHON, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True, text=True
    )
    return done.stdout


def post(url: str, token: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--next", type=int, default=5, help="submissions after the first")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="first-grade-"))
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    env["DATABASE_URL"] = f"sqlite:///{scratch / 'db.sqlite3'}"
    env["SUBMISSION_RATE"] = "1000/min"
    try:
        manage(env, "migrate", "--noinput", "-v0")
        manage(env, "load_bank")
        token = manage(
            env,
            "shell",
            "-c",
            "from accounts.services import account_create, token_create\n"
            "u = account_create(username='bench', email='b@example.org', password='x-Bench-123')\n"
            "print(token_create(user=u, name='bench')[1])",
        ).split()[-1]  # the shell's own lines come first
        port = free_port()
        started = time.perf_counter()
        server = subprocess.Popen(
            [PYTHON, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            while True:
                try:
                    urllib.request.urlopen(f"{base}/health/", timeout=5).read()
                    break
                except (urllib.error.URLError, ConnectionError):
                    time.sleep(0.05)
            up = time.perf_counter() - started
            body = {"question": "stable-softmax-cross-entropy", "code": CODE, "mode": "submit"}
            t0 = time.perf_counter()
            status, first = post(f"{base}/api/submissions/", token, body)
            first_s = time.perf_counter() - t0
            assert status == 201 and first["status"] == "passed", (status, first)
            later = []
            for _ in range(args.next):
                t0 = time.perf_counter()
                status, verdict = post(f"{base}/api/submissions/", token, body)
                later.append(time.perf_counter() - t0)
                assert status == 201 and verdict["status"] == "passed", (status, verdict)
        finally:
            server.terminate()
            server.wait(timeout=30)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    load = os.getloadavg()[0]
    print(f"load average {load:.1f} on {os.cpu_count()} cores")
    print(f"server answers                      {up:6.2f} s after its start")
    after = up + first_s
    print(f"first verdict (POSTed at once)      {first_s:6.2f} s  ({after:.2f} s after start)")
    print(
        f"next {len(later)} verdicts, median            {statistics.median(later):6.2f} s"
        f"  (first / next: {first_s / statistics.median(later):.1f}x)"
    )


if __name__ == "__main__":
    sys.exit(main())
