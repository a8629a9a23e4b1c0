"""docker-compose.yml cannot be run here (no Docker engine); check what it promises instead."""

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def services():
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]


def test_it_has_every_component_of_the_design():
    assert set(services()) == {"postgres", "redis", "web", "worker-cpu", "worker-gpu", "sweeper"}


def test_the_sweep_runs_with_beat_on_a_queue_no_grading_worker_serves():
    # A grading backlog or a missing grading worker must not delay the sweep (issue 13, 9).
    s = services()
    sweeper = s["sweeper"]["command"]
    assert sweeper[sweeper.index("-Q") + 1] == "sweep" and "-B" in sweeper
    assert "cap_add" not in s["sweeper"] and s["sweeper"]["cap_drop"] == ["ALL"]
    for name in ("worker-cpu", "worker-gpu"):
        command = s[name]["command"]
        assert "sweep" not in command[command.index("-Q") + 1].split(",")


def test_the_web_container_is_not_privileged_and_has_no_capabilities():
    web = services()["web"]
    assert not web.get("privileged")
    assert web["cap_drop"] == ["ALL"] and "cap_add" not in web
    assert web["user"] != "0" and not web["user"].startswith("0:")
    assert "no-new-privileges:true" in web["security_opt"]


def test_workers_consume_their_own_queue_and_the_gpu_one_reserves_a_gpu():
    s = services()
    cpu, gpu = s["worker-cpu"]["command"], s["worker-gpu"]["command"]
    assert cpu[cpu.index("-Q") + 1] == "cpu" and gpu[gpu.index("-Q") + 1] == "gpu"
    devices = s["worker-gpu"]["deploy"]["resources"]["reservations"]["devices"]
    assert devices[0]["driver"] == "nvidia" and "gpu" in devices[0]["capabilities"]
    for name in ("worker-cpu", "worker-gpu"):
        assert not s[name].get("privileged")
        assert s[name]["cap_drop"] == ["ALL"]


def test_no_secret_is_written_into_it():
    text = (ROOT / "docker-compose.yml").read_text()
    assert "${SECRET_KEY:?" in text  # required from the environment, never a literal
    assert services()["web"]["environment"]["DEBUG"] == "0"


def test_production_mail_is_passed_and_required():
    env = services()["web"]["environment"]
    assert env["EMAIL_BACKEND"].endswith("smtp.EmailBackend}")
    assert env["EMAIL_HOST"].startswith("${EMAIL_HOST:?")
