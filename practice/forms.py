from django import forms

from quizbank.models import Question, Topic

from .models import MAX_NOTE_CHARS
from .models.interviews import MAX_MINUTES, MAX_QUESTIONS, MIN_MINUTES, MIN_QUESTIONS


class NoteForm(forms.Form):
    text = forms.CharField(
        label="Your private note",
        required=False,
        max_length=MAX_NOTE_CHARS,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text="Only you can see it. Save an empty note to delete it.",
    )


class SubmissionForm(forms.Form):
    # The size limit is the service's (64 KiB of UTF-8), checked there in bytes.
    code = forms.CharField(strip=False, error_messages={"required": "The code is empty."})
    scratch = forms.CharField(strip=False, required=False)  # Try your own input


class InterviewForm(forms.Form):
    """A custom mock interview (the presets are buttons that post `preset` alone)."""

    topics = forms.ModelMultipleChoiceField(
        queryset=Topic.objects.order_by("order", "name"),
        to_field_name="slug",
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="None ticked: every topic.",
    )
    difficulty = forms.MultipleChoiceField(
        choices=Question.Difficulty.choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="None ticked: every level.",
    )
    questions = forms.IntegerField(
        min_value=MIN_QUESTIONS,
        max_value=MAX_QUESTIONS,
        initial=5,
        label="Number of questions",
        widget=forms.NumberInput(attrs={"min": MIN_QUESTIONS, "max": MAX_QUESTIONS}),
    )
    minutes = forms.IntegerField(
        min_value=MIN_MINUTES,
        max_value=MAX_MINUTES,
        initial=45,
        widget=forms.NumberInput(attrs={"min": MIN_MINUTES, "max": MAX_MINUTES}),
    )
