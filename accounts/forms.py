from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import AuthenticationForm, UserCreationForm
from django.core.exceptions import ValidationError

from . import throttling
from .models import DAILY_GOAL_MAX, DAILY_GOAL_MIN, Profile
from .names import name_key


class PlainLabels:
    """Labels without Django's trailing colon."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)


class LoginThrottleMixin(AuthenticationForm):
    """Refuses sign-ins from an address after too many failures (see throttling.py)."""

    throttled_message = (
        "Too many failed sign-ins. Wait %(minutes)d minutes, or reset your password."
    )

    def clean(self):
        username = self.cleaned_data.get("username") or ""
        address = throttling.client_address(self.request) if self.request else ""
        if throttling.login_blocked(username=username, address=address):
            raise ValidationError(
                self.throttled_message,
                code="throttled",
                params={"minutes": max(1, settings.LOGIN_FAILURE_WINDOW // 60)},
            )
        wait = throttling.slowed_for(username=username, request=self.request)
        if wait:
            raise ValidationError(
                "This account had many failed sign-ins from elsewhere. Wait %(seconds)d seconds "
                "and try again, or reset your password.",
                code="throttled",
                params={"seconds": wait},
            )
        try:
            cleaned = super().clean()
        except ValidationError:
            throttling.login_failed(username=username, address=address)
            raise
        throttling.login_succeeded(username=username, address=address)
        return cleaned


class LoginForm(PlainLabels, LoginThrottleMixin, AuthenticationForm):
    pass


class AdminLoginForm(LoginThrottleMixin, AdminAuthenticationForm):
    pass


class SignupForm(PlainLabels, UserCreationForm):
    email = forms.EmailField(
        required=False,
        max_length=254,  # the column's length; longer would be a database error, not a message
        help_text="Optional: only used to reset your password.",
    )

    class Meta(UserCreationForm.Meta):
        model = get_user_model()
        fields = ("username", "email")

    TAKEN = "That name is taken, or looks too much like one that is: choose another."

    def clean_username(self):
        username = super().clean_username()  # None once Django found the name itself
        if username and get_user_model().objects.filter(username_key=name_key(username)).exists():
            raise ValidationError(self.TAKEN, code="taken")
        return username


class ProfileForm(PlainLabels, forms.ModelForm):
    # Declared, not derived: the model's PositiveSmallIntegerField would render min="0" (its own
    # lower bound), letting the browser accept a goal the server then refuses.
    daily_goal = forms.IntegerField(
        label="Daily goal",
        min_value=DAILY_GOAL_MIN,
        max_value=DAILY_GOAL_MAX,
        help_text=f"Questions to practise a day ({DAILY_GOAL_MIN} to {DAILY_GOAL_MAX}).",
    )
    email = forms.EmailField(
        required=False,
        max_length=254,
        help_text="Only used to reset your password; never shown to anyone.",
    )

    class Meta:
        model = Profile
        fields = ("display_name", "daily_goal", "hide_difficulty")
        labels = {"daily_goal": "Daily goal", "hide_difficulty": "Hide difficulty everywhere"}
        help_texts = {
            "display_name": "How the site greets you. Leave empty to use your username.",
            "hide_difficulty": "As in a real interview: no easy, medium or hard on the question "
            "list, question pages and reviews.",
        }


class TokenForm(PlainLabels, forms.Form):
    name = forms.CharField(max_length=100, help_text="What will use it, e.g. “laptop script”.")
    expires_in_days = forms.TypedChoiceField(
        label="Expires",
        coerce=int,
        choices=[(30, "in 30 days"), (90, "in 90 days"), (365, "in a year"), (0, "never")],
        initial=90,
    )


class DeleteAccountForm(PlainLabels, forms.Form):
    password = forms.CharField(
        label="Your password",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
        help_text="To be sure it is you.",
    )

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user

    def clean_password(self):
        password = self.cleaned_data["password"]
        if not self.user.check_password(password):
            raise ValidationError("That is not your password.", code="wrong_password")
        return password
