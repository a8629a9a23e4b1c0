from django.db import migrations, models


def key_existing_names(apps, schema_editor):
    from accounts.names import name_key

    User = apps.get_model("accounts", "User")
    for user in User.objects.only("pk", "username").iterator():
        User.objects.filter(pk=user.pk).update(username_key=name_key(user.username))


class Migration(migrations.Migration):
    dependencies = [("accounts", "0006_token_password_fingerprint")]

    operations = [
        migrations.AddField(
            model_name="user",
            name="username_key",
            field=models.CharField(db_index=True, default="", editable=False, max_length=150),
        ),
        migrations.RunPython(key_existing_names, migrations.RunPython.noop),
    ]
