from django.db import migrations, models


class Migration(migrations.Migration):
    """The embeddings of each question's symptom passages (quizbank/search/semantic.py), stored
    with it. Existing rows are left empty: the next load_bank, or the first search that reads a
    question, computes them."""

    dependencies = [
        ("quizbank", "0016_question_bm25_words"),
    ]

    operations = [
        migrations.AddField(
            model_name="question",
            name="symptom_embeddings",
            field=models.BinaryField(editable=False, null=True),
        ),
        migrations.AddField(
            model_name="question",
            name="symptom_key",
            field=models.CharField(blank=True, default="", editable=False, max_length=64),
        ),
    ]
