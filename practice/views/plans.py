"""Study plan pages: the plans with your progress through each, one plan day by day, and
starting one (which puts it on the home page as "Continue plan")."""

from __future__ import annotations

from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.shortcuts import redirect, render, resolve_url
from django.urls import reverse
from django.views.decorators.http import require_POST

from ..selectors import plans as selectors
from ..services import plans


def plan_list(request):
    return render(
        request, "practice/plan_list.html", {"plans": selectors.plan_list(user=request.user)}
    )


def plan_detail(request, slug: str):
    progress = selectors.plan_get(user=request.user, slug=slug)
    return render(request, "practice/plan_detail.html", {"progress": progress})


@require_POST
def plan_start(request, slug: str):
    progress = selectors.plan_get(user=request.user, slug=slug)
    if not request.user.is_authenticated:
        next_url = reverse("practice:plan-detail", args=[slug])
        return redirect(f"{resolve_url(settings.LOGIN_URL)}?{urlencode({'next': next_url})}")
    plans.plan_start(user=request.user, plan=progress.plan)
    messages.success(
        request, f"You are following “{progress.plan.title}”: it waits on your home page."
    )
    return redirect("practice:plan-detail", slug=slug)
