from django.contrib import admin
from django.contrib.auth.admin import UserAdmin
from rest_framework.authtoken.models import TokenProxy

from .forms import AdminLoginForm
from .models import ApiToken, Profile, User

# The admin's sign-in is throttled like the site's.
admin.site.login_form = AdminLoginForm


class ProfileInline(admin.StackedInline):
    model = Profile
    can_delete = False


@admin.register(User)
class QuizbankUserAdmin(UserAdmin):
    inlines = [ProfileInline]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Staff see which tokens exist, never a key (only its hash is stored)."""

    list_display = ["name", "user", "prefix", "created_at", "expires_at", "last_used_at"]
    list_select_related = ["user"]
    search_fields = ["user__username", "name", "prefix"]
    readonly_fields = ["user", "name", "prefix", "created_at", "expires_at", "last_used_at"]
    exclude = ["key_hash"]

    def has_add_permission(self, request):
        return False


# DRF's own token model is kept only so the migration could move its keys; its admin would list
# plain keys, so it is not shown.
if admin.site.is_registered(TokenProxy):
    admin.site.unregister(TokenProxy)
