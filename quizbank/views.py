from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, render

from . import selectors
from .filters import QuestionFilter


def home(request):
    return render(request, "quizbank/home.html", {"topics": selectors.topic_list()})


def question_list(request):
    filterset = QuestionFilter(request.GET, queryset=selectors.question_list(user=request.user))
    questions = (
        filterset.qs if filterset.is_valid() else selectors.question_list(user=request.user).none()
    )
    page = Paginator(questions, 20).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "quizbank/question_list.html",
        {
            "filterset": filterset,
            "page": page,
            "query": query.urlencode(),
            "topics": selectors.topic_list(),
            "applications": selectors.application_list(),
        },
    )


def question_detail(request, slug):
    question = get_object_or_404(selectors.question_detail_queryset(user=request.user), slug=slug)
    return render(request, "quizbank/question_detail.html", {"question": question})
