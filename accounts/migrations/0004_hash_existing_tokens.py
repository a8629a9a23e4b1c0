import hashlib

from django.db import migrations


def hash_plain_keys(apps, schema_editor):
    """Every plain DRF token becomes a hashed one that keeps working; the plain key is deleted."""
    Token = apps.get_model("authtoken", "Token")
    ApiToken = apps.get_model("accounts", "ApiToken")
    for token in Token.objects.all():
        ApiToken.objects.create(
            user_id=token.user_id,
            name="token",
            key_hash=hashlib.sha256(token.key.encode()).hexdigest(),
            prefix=token.key[:8],
        )
    Token.objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0003_api_tokens"),
        ("authtoken", "0004_alter_tokenproxy_options"),
    ]

    operations = [migrations.RunPython(hash_plain_keys, migrations.RunPython.noop)]
