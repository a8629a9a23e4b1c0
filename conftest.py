import pytest
from rest_framework.test import APIClient


@pytest.fixture
def api():
    return APIClient()


@pytest.fixture
def user(db):
    from accounts.tests.factories import UserFactory

    return UserFactory(username="learner")


@pytest.fixture
def staff(db):
    from accounts.tests.factories import UserFactory

    return UserFactory(username="curator", is_staff=True)


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    # The production hasher is slow on purpose; tests only need passwords to round-trip.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _clean_cache():
    # The cache (Redis in CI) outlives each test's rolled-back transaction: a count cached by one
    # test must not be read by the next.
    from django.core.cache import caches

    for alias in ("default", "local"):
        caches[alias].clear()
    yield
    for alias in ("default", "local"):
        caches[alias].clear()
