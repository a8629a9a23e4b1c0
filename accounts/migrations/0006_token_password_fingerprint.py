import hashlib

from django.db import migrations, models


def fingerprint_existing_tokens(apps, schema_editor):
    """Tokens made before this migration are bound to the password their owner has now."""
    ApiToken = apps.get_model("accounts", "ApiToken")
    for token in ApiToken.objects.select_related("user").iterator():
        token.password_fingerprint = hashlib.sha256(token.user.password.encode()).hexdigest()
        token.save(update_fields=["password_fingerprint"])


class Migration(migrations.Migration):
    dependencies = [("accounts", "0005_merge_tokens_and_hide_difficulty")]

    operations = [
        migrations.AddField(
            model_name="apitoken",
            name="password_fingerprint",
            field=models.CharField(
                default="",
                editable=False,
                help_text="A digest of the owner's password hash when the token was made: once the password changes, by any route, the token no longer signs in.",
                max_length=64,
            ),
            preserve_default=False,
        ),
        migrations.RunPython(fingerprint_existing_tokens, migrations.RunPython.noop),
    ]
