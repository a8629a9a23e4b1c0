from rest_framework.routers import SimpleRouter

from . import views

router = SimpleRouter()
router.register("submissions", views.SubmissionViewSet, basename="submission")

urlpatterns = router.urls
