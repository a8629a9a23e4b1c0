from django.db import migrations, models


class Migration(migrations.Migration):
    """Each question's words for BM25 (quizbank/search/bm25.py), stored with it. Existing rows are
    left empty: the first BM25 index a process builds reads their text once and stores them."""

    dependencies = [
        ("quizbank", "0015_question_bank_digest"),
    ]

    operations = [
        migrations.AddField(
            model_name="question",
            name="bm25_words",
            field=models.JSONField(editable=False, null=True),
        ),
    ]
