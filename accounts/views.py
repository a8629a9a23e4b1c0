from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login, logout
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import NON_FIELD_ERRORS
from django.shortcuts import redirect, render
from django.urls import reverse_lazy
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST
from rest_framework.authtoken.models import Token

from . import services
from .forms import DeleteAccountForm, LoginForm, ProfileForm, SignupForm
from .models import Profile


def _next_url(request, default=settings.LOGIN_REDIRECT_URL):
    target = request.POST.get("next") or request.GET.get("next") or ""
    if url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return default


class LoginView(auth_views.LoginView):
    form_class = LoginForm
    redirect_authenticated_user = True

    def form_invalid(self, form):
        response = super().form_invalid(form)
        if form.has_error(NON_FIELD_ERRORS, "throttled"):
            response.status_code = 429
        return response


def signup(request):
    if request.user.is_authenticated:
        return redirect(_next_url(request))
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = services.account_create(
            username=form.cleaned_data["username"],
            email=form.cleaned_data["email"],
            password=form.cleaned_data["password1"],
        )
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        messages.success(request, "Welcome! Your progress is saved from now on.")
        return redirect(_next_url(request))
    return render(
        request, "registration/signup.html", {"form": form, "next": _next_url(request, "")}
    )


@login_required
def profile(request):
    current, _ = Profile.objects.get_or_create(user=request.user)
    form = ProfileForm(
        request.POST or None, instance=current, initial={"email": request.user.email}
    )
    if request.method == "POST" and form.is_valid():
        services.profile_update(
            user=request.user,
            display_name=form.cleaned_data["display_name"],
            daily_goal=form.cleaned_data["daily_goal"],
            email=form.cleaned_data["email"],
            hide_difficulty=form.cleaned_data["hide_difficulty"],
        )
        messages.success(request, "Profile saved.")
        return redirect("accounts:profile")
    return render(request, "accounts/profile.html", {"form": form})


@login_required
def delete(request):
    """ "Delete my account": asks for the password, then removes the account and all it owns."""
    form = DeleteAccountForm(request.POST or None, user=request.user)
    if request.method == "POST" and form.is_valid():
        user = request.user
        logout(request)
        services.account_delete(user=user)
        messages.success(request, "Your account and everything in it were deleted.")
        return redirect(settings.LOGOUT_REDIRECT_URL or "/")
    return render(request, "accounts/delete.html", {"form": form})


@login_required
def tokens(request):
    token = Token.objects.filter(user=request.user).first()
    return render(request, "accounts/tokens.html", {"token": token})


@login_required
@require_POST
def token_create(request):
    token = services.token_create(user=request.user)
    # The key is shown once, on this response; the page afterwards only says a token exists.
    return render(request, "accounts/tokens.html", {"token": token, "new_key": token.key})


@login_required
@require_POST
def token_revoke(request):
    if services.token_revoke(user=request.user):
        messages.success(request, "Token revoked: programs using it can no longer sign in.")
    return redirect("accounts:tokens")


password_change = auth_views.PasswordChangeView.as_view(
    success_url=reverse_lazy("accounts:password_change_done")
)
password_change_done = auth_views.PasswordChangeDoneView.as_view()
password_reset = auth_views.PasswordResetView.as_view(
    success_url=reverse_lazy("accounts:password_reset_done"),
    email_template_name="registration/password_reset_email.txt",
    subject_template_name="registration/password_reset_subject.txt",
)
password_reset_done = auth_views.PasswordResetDoneView.as_view()
password_reset_confirm = auth_views.PasswordResetConfirmView.as_view(
    success_url=reverse_lazy("accounts:password_reset_complete")
)
password_reset_complete = auth_views.PasswordResetCompleteView.as_view()
