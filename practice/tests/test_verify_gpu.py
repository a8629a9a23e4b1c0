"""`manage.py verify_gpu` (`make verify-gpu`): it must never pass where CUDA is absent, and says
why. (On a machine with a GPU it grades the GPU-queue exercises; that run is not part of CI.)"""

import pytest
from django.core.management import call_command

from practice import grader_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def fresh_pools():
    grader_client.close_pools()
    yield
    grader_client.close_pools()


def test_without_a_cuda_device_it_exits_non_zero_and_says_so(settings, fresh_pools, capsys):
    settings.GRADER_GPU_DEVICES = "none"  # the fake, empty device list: as on any CI machine
    with pytest.raises(SystemExit) as exit:
        call_command("verify_gpu")
    assert exit.value.code == 2
    assert "verify_gpu: no CUDA device" in capsys.readouterr().err
