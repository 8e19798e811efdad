"""docker-compose.yml cannot run here (no Docker daemon, no GPU), so this
checks what it promises: the five services, the GPU reservations, AOF, and
volumes for the data folder and the databases."""

import shlex
from pathlib import Path

import yaml

COMPOSE = yaml.safe_load((Path(__file__).resolve().parents[2] / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]


def test_it_names_the_five_services():
    assert set(SERVICES) == {"web", "worker", "modelserver", "redis", "postgres"}


def test_the_worker_reserves_nvidia_gpus_and_runs_the_worker_command():
    devices = SERVICES["worker"]["deploy"]["resources"]["reservations"]["devices"]
    assert devices[0]["driver"] == "nvidia" and "gpu" in devices[0]["capabilities"]
    assert SERVICES["worker"]["command"] == "python manage.py worker"


def test_the_model_server_runs_beside_the_worker_on_the_same_data_and_redis():
    service = SERVICES["modelserver"]
    assert service["command"] == "python -m trainer.modelserver"
    assert "data:/data" in service["volumes"]
    assert service["environment"]["REDIS_URL"] == "redis://redis:6379/0"
    assert service["environment"]["MODEL_SERVER_DEVICE"] == "${MODEL_SERVER_DEVICE:-cpu}"
    devices = service["deploy"]["resources"]["reservations"]["devices"]
    assert devices[0]["driver"] == "nvidia" and "gpu" in devices[0]["capabilities"]


def test_redis_keeps_an_append_only_file_on_a_volume():
    assert "--appendonly yes" in SERVICES["redis"]["command"]
    assert SERVICES["redis"]["volumes"] == ["redisdata:/data"]


def test_web_and_worker_share_the_data_volume_and_postgres():
    for name in ("web", "worker"):
        service = SERVICES[name]
        assert "data:/data" in service["volumes"]
        assert service["environment"]["DATABASE_URL"].startswith("postgres://")
        assert service["environment"]["REDIS_URL"] == "redis://redis:6379/0"
    assert SERVICES["postgres"]["volumes"] == ["pgdata:/var/lib/postgresql/data"]
    assert set(COMPOSE["volumes"]) == {"data", "pgdata", "redisdata"}


def test_the_web_service_migrates_before_serving():
    command = SERVICES["web"]["command"]
    assert command.index("migrate") < command.index("uvicorn")


def test_the_web_service_trusts_forwarded_headers_only_from_the_configured_proxies():
    shell_command = shlex.split(SERVICES["web"]["command"])[-1]  # as Compose splits it for sh -c
    assert shell_command.endswith('--forwarded-allow-ips "$$FORWARDED_ALLOW_IPS"')
    assert SERVICES["web"]["environment"]["FORWARDED_ALLOW_IPS"] == "${FORWARDED_ALLOW_IPS:-}"


def test_passwords_come_from_the_environment():
    assert "${POSTGRES_PASSWORD:?" in SERVICES["postgres"]["environment"]["POSTGRES_PASSWORD"]
    assert "${POSTGRES_PASSWORD:?" in SERVICES["web"]["environment"]["DATABASE_URL"]
    assert SERVICES["web"]["environment"]["SECRET_KEY"].startswith("${SECRET_KEY:?")


def test_the_image_runs_as_an_unprivileged_user():
    lines = (Path(__file__).resolve().parents[2] / "Dockerfile").read_text().splitlines()
    users = [line.split()[1] for line in lines if line.startswith("USER ")]
    assert users and users[-1] not in ("root", "0")


def test_the_model_server_runs_models_code_without_the_apps_secrets():
    environment = SERVICES["modelserver"]["environment"]
    assert not {"SECRET_KEY", "DATABASE_URL", "ADMIN_PASSWORD", "POSTGRES_PASSWORD"} & set(environment)
    assert environment["REDIS_URL"] == "redis://redis:6379/0" and environment["WORKER_HOST"]
    assert SERVICES["worker"]["environment"]["DATABASE_URL"] == SERVICES["web"]["environment"]["DATABASE_URL"]
