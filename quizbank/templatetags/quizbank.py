from datetime import datetime, timedelta
from string import ascii_uppercase
from typing import Any

from django import template
from django.utils import timezone
from django.utils.html import escape
from django.utils.safestring import mark_safe
from django.utils.timesince import timeuntil

from ..markdown import render_code_block, render_markdown, render_markdown_inline
from ..search import question_search_fields

register = template.Library()


@register.filter(name="markdown")
def markdown_filter(text: str) -> str:
    return mark_safe(render_markdown(text or ""))  # noqa: S308 - sanitised by nh3 in render_markdown


@register.filter(name="markdown_inline")
def markdown_inline_filter(text: str) -> str:
    return mark_safe(render_markdown_inline(str(text or "")))  # noqa: S308 - sanitised by nh3


@register.filter(name="check_message")
def check_message_filter(text: str) -> str:
    """A grader's check message as text: every character escaped, line breaks and indentation
    kept (the CSS says pre-wrap), and only `backticked` spans shown as code. A message can quote
    the learner's own exception text, so no other Markdown (links, emphasis, headings) applies."""
    parts = str(text or "").split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: the last one is a character, not markup
        parts[-2:] = [parts[-2] + "`" + parts[-1]]
    html = "".join(
        f"<code>{escape(part)}</code>" if odd and part else escape(part)
        for odd, part in ((i % 2 == 1, p) for i, p in enumerate(parts))
    )
    return mark_safe(html)  # noqa: S308 - every part is escaped above


@register.simple_tag
def code_block(code: Any, lang: str = "", label: str = "") -> str:
    """{% code_block s.code "python" "Your code" %}: highlighted, keyboard-scrollable, named."""
    html = render_code_block(str(code or ""), lang=lang, label=label)
    return mark_safe(html)  # noqa: S308 - Pygments escapes the code; the attributes are escaped


@register.filter
def letter(index: int) -> str:
    """0 -> A, 1 -> B: how choices are named."""
    return ascii_uppercase[index] if 0 <= index < len(ascii_uppercase) else str(index + 1)


@register.simple_tag
def right_choices(check: Any) -> list[tuple[str, str]]:
    """The right answer of a choice quick check as (letter, choice) pairs."""
    indices = check.answer if isinstance(check.answer, list) else [check.answer]
    return [(letter(i), check.choices[i]) for i in indices if 0 <= i < len(check.choices)]


@register.filter
def not_run(checks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The checks a run never reached: shown collapsed, after the ones that say something."""
    return [c for c in checks if c.get("message") == "Not run."]


@register.simple_tag
def search_fields(question: Any) -> dict[str, Any]:
    """A list row's title with the searched words marked, and the snippet where they matched."""
    fields = question_search_fields(question)
    return {name: mark_safe(value) for name, value in fields.items()}  # noqa: S308 - escaped, then marked


@register.filter
def duration(seconds: Any) -> str:
    """Seconds as a clock reads them: 75 -> 1:15, 3675 -> 1:01:15."""
    try:
        total = max(0, int(seconds))
    except (TypeError, ValueError):
        return ""
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


@register.filter
def from_now(when: Any) -> str:
    """When something comes due, in words: "in 3 hours, 5 minutes", "in under a minute", "now".
    Django's timeuntil alone says "0 minutes" for anything under a minute away."""
    if not isinstance(when, datetime):
        return ""
    left = when - timezone.now()
    if left <= timedelta(0):
        return "now"
    if left < timedelta(minutes=1):
        return "in under a minute"
    return f"in {timeuntil(when)}"


@register.filter
def short_interval(delta: Any) -> str:
    """A time until the next review, as rating buttons show it: 10 min, 5 h, 3 d, 2 mo; and
    "tomorrow" for a wait under a day that ends at midnight (TIME_ZONE), as "hard" does when it
    is kept from coming back the same day: "7 h" there would read as later today."""
    try:
        seconds = max(0, int(delta.total_seconds()))
    except AttributeError:
        return ""
    if seconds < 86400:
        due = timezone.localtime(timezone.now() + delta)
        since_midnight = due.hour * 3600 + due.minute * 60 + due.second
        if since_midnight < 60 or since_midnight > 86400 - 60:
            return "tomorrow"
    for size, unit in ((30 * 86400, "mo"), (86400, "d"), (3600, "h")):
        if seconds >= size:
            return f"{round(seconds / size)} {unit}"
    return f"{max(1, round(seconds / 60))} min"
