import re

import pytest
from django.core import mail

pytestmark = pytest.mark.django_db

NEW = "another-long-passphrase-42"


def test_a_learner_changes_their_password_and_stays_signed_in(client, user):
    client.force_login(user)
    response = client.post(
        "/accounts/password/change/",
        {"old_password": "a-long-test-password", "new_password1": NEW, "new_password2": NEW},
    )
    assert response["Location"] == "/accounts/password/change/done/"
    user.refresh_from_db()
    assert user.check_password(NEW)
    assert client.get("/accounts/profile/").status_code == 200


def test_changing_the_password_needs_the_old_one(client, user):
    client.force_login(user)
    response = client.post(
        "/accounts/password/change/",
        {"old_password": "wrong", "new_password1": NEW, "new_password2": NEW},
    )
    assert response.status_code == 200
    user.refresh_from_db()
    assert not user.check_password(NEW)


def test_a_password_reset_mails_a_link_that_sets_a_new_password(client, user):
    user.email = "learner@example.com"
    user.save()
    response = client.post("/accounts/password/reset/", {"email": "learner@example.com"})
    assert response["Location"] == "/accounts/password/reset/sent/"
    assert len(mail.outbox) == 1 and "Reset your quizbank password" in mail.outbox[0].subject
    link = re.search(r"http://testserver(/accounts/password/reset/\S+/)", mail.outbox[0].body)
    # The link redirects once to a URL without the token in it, then shows the form.
    form_url = client.get(link.group(1))["Location"]
    response = client.post(form_url, {"new_password1": NEW, "new_password2": NEW})
    assert response["Location"] == "/accounts/password/reset/done/"
    user.refresh_from_db()
    assert user.check_password(NEW)


def test_a_reset_for_an_unknown_address_sends_nothing_and_says_the_same(client, user):
    response = client.post("/accounts/password/reset/", {"email": "nobody@example.com"})
    assert response["Location"] == "/accounts/password/reset/sent/"
    assert mail.outbox == []
