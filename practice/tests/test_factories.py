"""Every factory makes a valid row (full_clean and the database constraints agree with it)."""

import pytest

from accounts.tests.factories import ProfileFactory, UserFactory
from practice.tests.factories import (
    ActivityFactory,
    BookmarkFactory,
    NoteFactory,
    QuestionProgressFactory,
    ReviewCardFactory,
    SubmissionFactory,
)

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "factory",
    [
        UserFactory,
        ProfileFactory,
        SubmissionFactory,
        QuestionProgressFactory,
        ActivityFactory,
        ReviewCardFactory,
        BookmarkFactory,
        NoteFactory,
    ],
)
def test_the_factory_makes_a_valid_row(factory):
    row = factory()
    row.full_clean()
    assert type(row).objects.filter(pk=row.pk).exists()


def test_a_factory_user_can_sign_in(client):
    user = UserFactory()
    assert client.login(username=user.username, password="a-long-test-password")
