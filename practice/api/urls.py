"""The whole API on one screen: every viewset under /api/, on the one router (the API root lists
them all). It lives in the learner app, the top of the stack, so it can mount the content app's
viewsets and its own without depending on the order apps load in."""

from rest_framework.routers import DefaultRouter

from quizbank.api.views import ApplicationViewSet, TopicViewSet

from . import review, views

app_name = "api"

router = DefaultRouter()
# The bank's question list with the learner's own filters (progress, bookmarks) added.
router.register("questions", views.LearnerQuestionViewSet, basename="question")
router.register("topics", TopicViewSet, basename="topic")
router.register("applications", ApplicationViewSet, basename="application")
router.register("quick-checks", views.QuickCheckViewSet, basename="quick-check")
router.register("submissions", views.SubmissionViewSet, basename="submission")
router.register("progress", views.ProgressViewSet, basename="progress")
router.register("interviews", views.InterviewViewSet, basename="interview")
router.register("plans", views.PlanViewSet, basename="plan")
router.register("me", views.MeViewSet, basename="me")
router.register("reviews", review.ReviewViewSet, basename="review")

urlpatterns = router.urls
