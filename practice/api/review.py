"""The review API: the same session as /review/ for scripts and apps (decks, what remains, rating,
undo, and code questions solved again). Its serializers live here, beside the one viewset that
uses them, to keep views.py and serializers.py under the size where they would split."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import permissions, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from quizbank.api.schema import SummarySchema
from quizbank.models import Question

from .. import scheduling
from ..models import Activity, ReviewCard
from ..selectors import review as review_selectors
from ..services import review as review_services

CARDS_LISTED = 20
RATING_NAMES = Activity.Rating.by_public_name()


class ReviewCardSerializer(serializers.ModelSerializer):
    question = serializers.SlugField(source="question.slug")

    class Meta:
        model = ReviewCard
        fields = [
            "question",
            "state",
            "step",
            "stability",
            "difficulty",
            "due",
            "last_review",
            "reviews",
            "last_rating",
        ]


class DeckCardSerializer(serializers.Serializer):
    question = serializers.SlugField(source="slug")
    title = serializers.CharField()
    kind = serializers.CharField()
    due = serializers.DateTimeField(source="card_due", allow_null=True, help_text="Null: new.")


class UndoSerializer(serializers.Serializer):
    rating = serializers.IntegerField(source="activity_id", help_text="POST it to undo/.")
    question = serializers.SlugField(source="activity.question.slug")
    value = serializers.CharField(source="activity.get_rating_display")


class ReviewSessionSerializer(serializers.Serializer):
    deck = serializers.CharField(source="deck.kind")
    topic = serializers.SlugField(source="deck.topic.slug", allow_null=True, default=None)
    remaining = serializers.IntegerField(help_text="Cards in the deck now.")
    reviewed_today = serializers.IntegerField()
    cards = DeckCardSerializer(many=True, help_text=f"The next {CARDS_LISTED}, in order.")
    intervals = serializers.DictField(
        child=serializers.IntegerField(),
        allow_null=True,
        help_text="For the first card (a concept question): seconds until it would come back "
        "after each rating.",
    )
    undo = UndoSerializer(allow_null=True)


class RateSerializer(serializers.Serializer):
    rating = serializers.ChoiceField(choices=list(RATING_NAMES))


class UndoRequestSerializer(serializers.Serializer):
    rating = serializers.IntegerField(help_text="The id of your last rating (`undo.rating`).")


class CodeReviewSerializer(serializers.Serializer):
    question = serializers.SlugField(source="question.slug")
    started_at = serializers.DateTimeField()
    hints_used = serializers.IntegerField()
    retries = serializers.IntegerField(help_text="Submissions in this review that did not pass.")
    starter_code = serializers.CharField(source="question.exercise.starter_code")
    hints = serializers.SerializerMethodField(help_text="The hints taken in this review.")

    def get_hints(self, review) -> list[str]:
        return [h.text for h in review.question.hints.all()[: review.hints_used]]


class ReviewViewSet(viewsets.ViewSet):
    """Your review session. `GET ?deck=all|bookmarks|missed` (or `?deck=topic&topic=<slug>`): what
    remains in the deck and its next cards. `POST {slug}/rate/ {"rating": "good"}` rates a
    concept card; `POST undo/ {"rating": <id>}` takes back your last rating exactly. A code card
    is solved again: `POST {slug}/solve/` opens its review, `POST /api/submissions/` grades your
    code, and the grader rates the review (a first-try pass with no hint: good; after a hint or a
    failed submission: hard); `{slug}/hint/` takes a hint, `{slug}/give-up/` rates it again.
    Cards that are not yours are 404."""

    permission_classes = [permissions.IsAuthenticated]
    schema = SummarySchema()  # `list` is the session: one object
    lookup_field = "slug"
    lookup_value_regex = r"[-a-zA-Z0-9_]+"

    @extend_schema(responses=ReviewSessionSerializer)
    def list(self, request):
        deck = review_selectors.deck_parse(request.query_params)
        user = request.user
        questions = review_selectors.deck_questions(user=user, deck=deck)
        cards = list(questions[:CARDS_LISTED])
        intervals = None
        if cards and cards[0].kind == Question.Kind.CONCEPT:
            card = ReviewCard.objects.filter(user=user, question=cards[0]).first()
            card = card or ReviewCard(user=user, question=cards[0], due=timezone.now())
            intervals = {
                name: int(delta.total_seconds())
                for name, delta in scheduling.intervals(card=card).items()
            }
        data: dict[str, Any] = {
            "deck": deck,
            "remaining": questions.count() if cards else 0,
            "reviewed_today": review_selectors.reviewed_today(user=user),
            "cards": cards,
            "intervals": intervals,
            "undo": review_selectors.undo_get(user=user),
        }
        return Response(ReviewSessionSerializer(data).data)

    @extend_schema(request=RateSerializer, responses=ReviewCardSerializer)
    @action(detail=True, methods=["post"])
    def rate(self, request, slug=None):
        question = review_selectors.review_question_get(user=request.user, slug=str(slug))
        serializer = RateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        rating = RATING_NAMES[serializer.validated_data["rating"]]
        card = review_services.review_answer(user=request.user, question=question, rating=rating)
        return Response(ReviewCardSerializer(card).data)

    @extend_schema(request=UndoRequestSerializer, responses=ReviewCardSerializer)
    @action(detail=False, methods=["post"])
    def undo(self, request):
        serializer = UndoRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        activity = review_selectors.rating_get(
            user=request.user, pk=serializer.validated_data["rating"]
        )
        card = review_services.review_undo(user=request.user, activity=activity)
        return Response(ReviewCardSerializer(card).data if card else None)

    @extend_schema(request=None, responses=CodeReviewSerializer)
    @action(detail=True, methods=["post"])
    def solve(self, request, slug=None):
        question = review_selectors.review_question_get(user=request.user, slug=str(slug))
        if not hasattr(question, "exercise"):
            raise ValidationError({"question": "Only a code question is solved again."})
        review = review_services.code_review_start(user=request.user, question=question)
        return Response(CodeReviewSerializer(review).data)

    @extend_schema(request=None, responses=CodeReviewSerializer)
    @action(detail=True, methods=["post"])
    def hint(self, request, slug=None):
        review = review_selectors.code_review_get(user=request.user, slug=str(slug))
        review = review_services.code_review_hint(review=review)
        return Response(CodeReviewSerializer(review).data)

    @extend_schema(request=None, responses=ReviewCardSerializer)
    @action(detail=True, methods=["post"], url_path="give-up")
    def give_up(self, request, slug=None):
        review = review_selectors.code_review_get(user=request.user, slug=str(slug))
        card = review_services.code_review_give_up(review=review)
        return Response(ReviewCardSerializer(card).data)
