"""What a search marks in a title or a snippet (quizbank/search/highlight.py)."""

from quizbank.search.highlight import highlight, snippet


def test_a_short_word_marks_only_itself_and_a_function_word_nothing():
    # "nan" reads as its synonyms' words too: "nans", "not a number" (fixtures/bank/synonyms.yaml).
    words = "nan nans not a number"
    text = "Nothing is wrong: not a NaN, just two nans beside a nanny and a number."
    assert highlight(text, words) == (
        "Nothing is wrong: not a <mark>NaN</mark>, just two <mark>nans</mark> beside a nanny "
        "and a <mark>number</mark>."
    )


def test_a_longer_stem_still_marks_the_forms_of_a_word():
    assert highlight("Reshaping or reshapes", "reshape") == (
        "<mark>Reshaping</mark> or <mark>reshapes</mark>"
    )
    assert snippet("Nothing here. A NaN appears.", "nan not") == "A <mark>NaN</mark> appears."
