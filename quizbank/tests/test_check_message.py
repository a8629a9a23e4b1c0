"""A check message is shown as text: the learner's exception text can be quoted in it."""

from quizbank.templatetags.quizbank import check_message_filter


def test_markdown_in_a_message_is_shown_as_typed():
    message = "raised ValueError: see [here](https://evil.example) and **now**\n# heading"
    html = str(check_message_filter(message))
    assert "<a" not in html and "<strong>" not in html and "<h1>" not in html
    assert "[here](https://evil.example)" in html and "**now**" in html and "# heading" in html


def test_html_is_escaped_and_backticks_are_code():
    html = str(check_message_filter("`out` differs: <script>alert(1)</script>"))
    assert html.startswith("<code>out</code> differs: &lt;script&gt;")


def test_indentation_and_an_unpaired_backtick_are_kept():
    html = str(check_message_filter("tensor([[1., 2.],\n        [3., 4.]]) and a lone ` here"))
    assert "\n        [3., 4.]" in html and "a lone ` here" in html and "<code>" not in html
