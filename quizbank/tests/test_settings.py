import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def start(env_overrides):
    env = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "ALLOWED_HOSTS", "DEBUG"}}
    env.update(env_overrides)
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=ROOT,
        env=env | {"DJANGO_SETTINGS_MODULE": "quizbank.settings"},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"DEBUG": "0"}, "SECRET_KEY must be set when DEBUG is off"),
        ({"DEBUG": "0", "SECRET_KEY": "x" * 50}, "ALLOWED_HOSTS must be set when DEBUG is off"),
        ({"DEBUG": "maybe"}, "DEBUG: expected a boolean"),
    ],
)
def test_a_missing_production_setting_fails_loudly_at_start_up(env, message):
    result = start(env)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and message in result.stderr


def test_production_starts_with_its_settings():
    result = start({"DEBUG": "0", "SECRET_KEY": "x" * 50, "ALLOWED_HOSTS": "quizbank.example"})
    assert result.returncode == 0, result.stderr
