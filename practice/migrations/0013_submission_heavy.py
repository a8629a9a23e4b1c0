from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("practice", "0012_submission_exercise_version"),
    ]

    operations = [
        migrations.AddField(
            model_name="submission",
            name="heavy",
            field=models.BooleanField(default=False),
        ),
    ]
