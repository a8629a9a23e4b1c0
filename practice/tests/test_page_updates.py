"""After a verdict, a rating or a quick check, the page updates in place (htmx out-of-band swaps
of "Your practice" and the badge), and "Next question" follows the learner's filtered list."""

import pytest

from quizbank.tests.factories import QuestionFactory, TopicFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def listed(exercise):
    topic = TopicFactory(slug="tensors", order=1)
    other = TopicFactory(slug="training", order=2)
    question = exercise.question
    question.primary_topic = topic
    question.save()
    question.topics.set([topic])
    before = QuestionFactory(slug="a-before", primary_topic=topic, topics=[topic])
    after = QuestionFactory(slug="z-after", primary_topic=topic, topics=[topic])
    QuestionFactory(slug="e-elsewhere", primary_topic=other, topics=[other])
    return question, before, after


def test_the_question_page_links_its_neighbours_in_the_filtered_list(client, listed):
    question, before, after = listed
    html = client.get(f"/questions/{question.slug}/?topic=tensors").content.decode()
    assert f'href="/questions/{before.slug}/?topic=tensors" rel="prev"' in html
    assert f'href="/questions/{after.slug}/?topic=tensors" rel="next"' in html
    assert "e-elsewhere" not in html


def test_a_pass_updates_the_practice_box_and_badge_and_offers_the_next_question(
    client, user, listed, eager, django_capture_on_commit_callbacks
):
    question, _, after = listed
    client.force_login(user)
    headers = {
        "HX-Request": "true",
        "HX-Current-URL": f"http://testserver/questions/{question.slug}/?topic=tensors",
    }
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            f"/questions/{question.slug}/submissions/",
            {"code": "def double(x):\n    return x * 2\n", "mode": "submit"},
            headers=headers,
        )
    # The page polls the submission; the poll that brings the verdict brings the updates.
    submission = user.submissions.get()
    html = client.get(f"/submissions/{submission.pk}/", headers=headers).content.decode()
    assert "✓ Passed" in html
    assert 'id="practice-card" aria-labelledby="practice-heading" hx-swap-oob="true"' in html
    assert "✓ Solved on" in html
    assert '<span id="progress-badge" hx-swap-oob="true"><span class="badge solved">' in html
    assert f'id="next-in-list" href="/questions/{after.slug}/?topic=tensors"' in html


def test_a_rating_updates_the_practice_box_in_place(client, user, listed):
    question, _, _ = listed
    client.force_login(user)
    html = client.post(
        f"/questions/{question.slug}/rate/", {"rating": "good"}, headers={"HX-Request": "true"}
    ).content.decode()
    assert 'id="practice-card"' in html and 'hx-swap-oob="true"' in html
    assert "Next review:" in html
