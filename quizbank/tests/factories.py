import factory

from quizbank.models import Application, Exercise, Hint, Question, QuickCheck, Topic


class TopicFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Topic
        django_get_or_create = ["slug"]

    slug = factory.Sequence(lambda n: f"topic-{n}")
    name = factory.LazyAttribute(lambda o: o.slug.replace("-", " ").title())
    order = factory.Sequence(int)


class ApplicationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Application
        django_get_or_create = ["slug"]

    slug = factory.Sequence(lambda n: f"application-{n}")
    name = factory.LazyAttribute(lambda o: o.slug.replace("-", " ").title())


class QuestionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Question
        skip_postgeneration_save = True

    slug = factory.Sequence(lambda n: f"question-{n}")
    title = factory.Sequence(lambda n: f"Question number {n}")
    prompt = "Explain the idea."
    answer = "The idea, explained."
    why_asked = "It shows understanding."
    concepts = factory.LazyFunction(lambda: ["torch.Tensor", "autograd"])
    difficulty = Question.Difficulty.EASY
    kind = Question.Kind.CONCEPT
    status = Question.Status.PUBLISHED
    primary_topic = factory.SubFactory(TopicFactory)

    @factory.post_generation
    def topics(self, create, extracted, **kwargs):
        self.topics.add(self.primary_topic, *(extracted or []))

    @factory.post_generation
    def applications(self, create, extracted, **kwargs):
        if extracted:
            self.applications.add(*extracted)


class HintFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Hint

    question = factory.SubFactory(QuestionFactory)
    order = factory.Sequence(lambda n: n + 1)
    text = "Think about it."


class QuickCheckFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = QuickCheck

    question = factory.SubFactory(QuestionFactory)
    order = factory.Sequence(lambda n: n + 1)
    kind = QuickCheck.Kind.SINGLE
    prompt = "Which one?"
    choices = factory.LazyFunction(lambda: ["this", "that", "neither"])
    answer = 1
    explanation = "Because that."


ADDS_TWO = (
    '"""Misconception: Doubling means adding two.\n\n'
    "Correction: Doubling multiplies by two; adding two agrees only at x = 2.\n\n"
    'Hint: Try x = 3.\n"""\n\n\n'
    "def double(x):\n    return x + 2\n"
)


class ExerciseFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Exercise
        skip_postgeneration_save = True

    question = factory.SubFactory(QuestionFactory, kind=Question.Kind.CODE)
    starter_code = "def double(x):\n    raise NotImplementedError\n"
    solution_code = "def double(x):\n    return x * 2\n"
    checks = factory.LazyFunction(
        lambda: [
            {
                "name": "doubles an example",
                "visible": True,
                "code": "out = double(torch.ones(2))",
                "compare": "out",
            },
            {
                "name": "hidden: doubles a secret tensor",
                "code": "SECRET_INPUT = torch.arange(7.0)\nout = double(SECRET_INPUT)",
                "compare": "out",
            },
        ]
    )
    wrong_solutions = factory.LazyFunction(lambda: {"adds": ADDS_TWO})

    @factory.post_generation
    def first_version(self, create, extracted, **kwargs):
        """Version 1, verified, as load_bank makes it (`first_version=False`: no version)."""
        if create and extracted is not False:
            self.version_create(verified=True)
