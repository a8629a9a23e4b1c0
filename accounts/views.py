from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login, logout
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.shortcuts import redirect, render
from django.urls import reverse_lazy
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_POST

from . import services, throttling
from .forms import DeleteAccountForm, LoginForm, ProfileForm, SignupForm, TokenForm
from .models import Profile
from .redirects import safe_next


def _next_url(request, default=settings.LOGIN_REDIRECT_URL):
    return safe_next(request, request.POST.get("next") or request.GET.get("next") or "", default)


class LoginView(auth_views.LoginView):
    form_class = LoginForm
    redirect_authenticated_user = True

    def form_valid(self, form):
        response = super().form_valid(form)
        throttling.remember_device(self.request, response, form.get_user().get_username())
        return response

    def form_invalid(self, form):
        response = super().form_invalid(form)
        if form.has_error(NON_FIELD_ERRORS, "throttled"):
            response.status_code = 429
        return response


def signup(request):
    if request.user.is_authenticated:
        return redirect(_next_url(request))
    form = SignupForm(request.POST or None)
    address = throttling.client_address(request)
    limit = settings.SIGNUP_LIMIT_PER_HOUR
    if request.method == "POST" and throttling.rate_reached(
        action="signup", key=address, limit=limit
    ):
        form.add_error(None, "Too many new accounts from your network; try again in an hour.")
        response = render(
            request, "registration/signup.html", {"form": form, "next": _next_url(request, "")}
        )
        response.status_code = 429
        return response
    if request.method == "POST":
        valid = form.is_valid()
        # What is counted is what the limit is for: accounts made, and answers that tell whether
        # a name is in use (probing for names). A mistyped password costs nothing.
        if valid or form.has_error("username", "taken") or form.has_error("username", "unique"):
            throttling.rate_limited(action="signup", key=address, limit=limit, window=3600)
        if valid:
            user = services.account_create(
                username=form.cleaned_data["username"],
                email=form.cleaned_data["email"],
                password=form.cleaned_data["password1"],
            )
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            messages.success(request, "Welcome! Your progress is saved from now on.")
            response = redirect(_next_url(request))
            throttling.remember_device(request, response, user.get_username())
            return response
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
    """The learner's tokens; a page that is never cached."""
    return _tokens_page(request, TokenForm())


def _tokens_page(request, form, *, new_key: str | None = None, status: int = 200):
    context = {"tokens": request.user.api_tokens.all(), "form": form, "new_key": new_key}
    response = render(request, "accounts/tokens.html", context, status=status)
    add_never_cache_headers(response)
    return response


@login_required
@require_POST
def token_create(request):
    form = TokenForm(request.POST)
    if form.is_valid():
        try:
            _, key = services.token_create(
                user=request.user,
                name=form.cleaned_data["name"],
                expires_in_days=form.cleaned_data["expires_in_days"] or None,
            )
        except ValidationError as exc:
            form.add_error("name", exc.message_dict["name"])
        else:
            # The key is in this response only: it is never stored, not even in the session
            # (a session row is readable by whoever reads the database). Reloading asks the
            # browser to post again, which makes another token under a name already taken: a 400.
            return _tokens_page(request, TokenForm(), new_key=key)
    return _tokens_page(request, form, status=400)


@login_required
@require_POST
def token_revoke(request, pk: int):
    if services.token_revoke(user=request.user, pk=pk):
        messages.success(request, "Token revoked: programs using it can no longer sign in.")
    return redirect("accounts:tokens")


class PasswordChangeView(auth_views.PasswordChangeView):
    success_url = reverse_lazy("accounts:password_change_done")

    def form_valid(self, form):
        response = super().form_valid(form)
        services.tokens_revoke_all(user=form.user)
        return response


class PasswordResetConfirmView(auth_views.PasswordResetConfirmView):
    success_url = reverse_lazy("accounts:password_reset_complete")

    def form_valid(self, form):
        response = super().form_valid(form)
        services.tokens_revoke_all(user=form.user)
        return response


password_change = PasswordChangeView.as_view()
password_change_done = auth_views.PasswordChangeDoneView.as_view()


class PasswordResetView(auth_views.PasswordResetView):
    """Reset mail is rate-limited per client address and per address of mail. Past a limit the
    page says the same as always (which accounts exist stays secret) but no mail is sent."""

    success_url = reverse_lazy("accounts:password_reset_done")
    email_template_name = "registration/password_reset_email.txt"
    subject_template_name = "registration/password_reset_subject.txt"

    def form_valid(self, form):
        limit = settings.PASSWORD_RESET_LIMIT_PER_HOUR
        by_address = throttling.rate_limited(
            action="reset-address",
            key=throttling.client_address(self.request),
            limit=limit,
            window=3600,
        )
        by_mail = throttling.rate_limited(
            action="reset-mail", key=form.cleaned_data["email"], limit=limit, window=3600
        )
        if by_address or by_mail:
            return redirect(self.success_url)
        return super().form_valid(form)


password_reset = PasswordResetView.as_view()
password_reset_done = auth_views.PasswordResetDoneView.as_view()
password_reset_confirm = PasswordResetConfirmView.as_view()
password_reset_complete = auth_views.PasswordResetCompleteView.as_view()
