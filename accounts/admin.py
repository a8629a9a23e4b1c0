from django.contrib import admin
from django.contrib.auth.admin import UserAdmin

from .forms import AdminLoginForm
from .models import Profile, User

# The admin's sign-in is throttled like the site's.
admin.site.login_form = AdminLoginForm


class ProfileInline(admin.StackedInline):
    model = Profile
    can_delete = False


@admin.register(User)
class QuizbankUserAdmin(UserAdmin):
    inlines = [ProfileInline]
