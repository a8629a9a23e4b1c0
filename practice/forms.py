from django import forms

from .models import MAX_NOTE_CHARS


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
