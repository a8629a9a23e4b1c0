"""A small site with something on every learner page: topics with many tags, a concept question
with hints, a quick check and a long code sample, a code question with an exercise and a graded
submission, a year of activity, reviews due, a plan started, an interview running and one done."""

from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import ApiToken
from practice.models import Activity, PlanItem, PlanSection, StudyPlan, Submission
from practice.services import interviews, learning, plans
from practice.tests.conftest import DOUBLE_CHECKS
from quizbank.tests.factories import (
    ApplicationFactory,
    ExerciseFactory,
    HintFactory,
    QuestionFactory,
    QuickCheckFactory,
    TopicFactory,
)

PASSWORD = "a-long-and-unusual-passphrase"

LONG_SAMPLE = """Compare the two:

```python
import torch

x = torch.arange(12, dtype=torch.float32).reshape(3, 4)  # long enough to scroll on a phone
print(x.mean(dim=1, keepdim=True) - x if x.is_contiguous() and not x.requires_grad else x)
```
"""


@dataclass
class Site:
    concept: str
    code: str
    submission: int
    interview: int
    report: int
    plan: str


@pytest.fixture
def site(transactional_db, django_user_model):
    user = django_user_model.objects.create_user("ada", password=PASSWORD)
    topics = [TopicFactory(slug=f"topic-{i}", name=f"Topic number {i}", order=i) for i in range(6)]
    applications = [ApplicationFactory(name=f"Application area {i}") for i in range(4)]
    concept = QuestionFactory(
        slug="views-and-copies",
        title="When does a tensor operation return a view rather than a copy?",
        primary_topic=topics[0],
        topics=topics[1:],
        applications=applications,
        prompt=LONG_SAMPLE,
        answer=LONG_SAMPLE,
        difficulty="hard",
    )
    HintFactory(question=concept, order=1, text="Think about strides.")
    QuickCheckFactory(question=concept, order=1, prompt="Which is a view?", answer=1)
    code = QuestionFactory(
        slug="double-it",
        title="Double a tensor",
        primary_topic=topics[1],
        topics=topics[2:],
        kind="code",
        prompt="Write `double(x)` that returns `x * 2`, keeping the dtype.",
    )
    ExerciseFactory(question=code, checks=DOUBLE_CHECKS, time_limit=10)
    QuestionFactory.create_batch(3, primary_topic=topics[2])
    submission = Submission.objects.create(
        user=user,
        question=code,
        code="import torch\n\ndef double(x):\n    return x + x  # " + "long comment " * 8 + "\n",
        status=Submission.Status.FAILED,
        message="1 of 2 checks passed.",
        checks=[
            {"name": "doubles an example", "status": "passed", "message": ""},
            {"name": "keeps the dtype", "status": "failed", "message": "expected int64"},
        ],
        output="a line of output " * 10,
        finished_at=timezone.now(),
    )
    now = timezone.now()
    Activity.objects.bulk_create(
        Activity(
            user=user,
            question=concept,
            kind=Activity.Kind.RATING,
            rating=Activity.Rating.GOOD,
            created_at=now - timedelta(days=days),
        )
        for days in range(0, 360, 9)
    )
    learning.review_rate(user=user, question=concept, rating=Activity.Rating.AGAIN)
    learning.bookmark_toggle(user=user, question=code)
    learning.note_save(user=user, question=code, text="Mind the dtype.")
    plan = StudyPlan.objects.create(slug="basics", title="Basics in a day", description="Go.")
    section = PlanSection.objects.create(plan=plan, order=1, title="Morning")
    PlanItem.objects.create(section=section, question=concept, order=1)
    PlanItem.objects.create(section=section, question=code, order=2)
    plans.plan_start(user=user, plan=plan)
    done = interviews.interview_create(
        user=user, topics=[], difficulty=[], questions=2, minutes=20, title="Warm-up"
    )
    interviews.interview_finish(interview=done)
    running = interviews.interview_create(
        user=user, topics=[], difficulty=[], questions=2, minutes=30, title="Screen"
    )
    ApiToken.objects.create(user=user, name="laptop script", key_hash="0" * 64, prefix="qb_00000")
    return Site(
        concept=f"/questions/{concept.slug}/",
        code=f"/questions/{code.slug}/",
        submission=submission.pk,
        interview=running.pk,
        report=done.pk,
        plan=f"/plans/{plan.slug}/",
    )


def sign_in(page, username: str = "ada") -> None:
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(lambda url: "/accounts/login/" not in url)
