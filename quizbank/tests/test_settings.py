import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def start(env_overrides):
    unset = {"SECRET_KEY", "ALLOWED_HOSTS", "DEBUG", "EMAIL_BACKEND"}
    env = {k: v for k, v in os.environ.items() if k not in unset}
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
        (
            {"DEBUG": "0", "SECRET_KEY": "x" * 50, "ALLOWED_HOSTS": "quizbank.example"},
            "EMAIL_BACKEND must be set when DEBUG is off",
        ),
    ],
)
def test_a_missing_production_setting_fails_loudly_at_start_up(env, message):
    result = start(env)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and message in result.stderr


PRODUCTION = {
    "DEBUG": "0",
    "SECRET_KEY": "a-production-key-that-is-long-and-random-enough-0123456789abcdef",
    "ALLOWED_HOSTS": "quizbank.example",
    "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
}


def test_production_starts_with_its_settings():
    result = start(PRODUCTION)
    assert result.returncode == 0, result.stderr


def test_check_deploy_is_clean_with_production_settings_but_for_hsts_preload():
    env = {k: v for k, v in os.environ.items() if k not in PRODUCTION}
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env | PRODUCTION | {"SECURE_HSTS_PRELOAD": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
