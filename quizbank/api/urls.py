from rest_framework.routers import DefaultRouter

from . import views

app_name = "api"

router = DefaultRouter()
router.register("questions", views.QuestionViewSet, basename="question")
router.register("topics", views.TopicViewSet, basename="topic")
router.register("applications", views.ApplicationViewSet, basename="application")
router.register("quick-checks", views.QuickCheckViewSet, basename="quick-check")

urlpatterns = router.urls
