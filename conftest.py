import pytest
from rest_framework.test import APIClient


@pytest.fixture
def api():
    return APIClient()


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user("learner", password="a-long-test-password")


@pytest.fixture
def staff(django_user_model):
    return django_user_model.objects.create_user(
        "curator", password="a-long-test-password", is_staff=True
    )


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    # The production hasher is slow on purpose; tests only need passwords to round-trip.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
