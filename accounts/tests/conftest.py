import pytest
from django.core.cache import cache


@pytest.fixture(autouse=True)
def _clean_cache():
    # Failed sign-ins are counted in the cache (Redis in CI): every test starts from none.
    cache.clear()
    yield
    cache.clear()
