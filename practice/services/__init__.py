"""Writes that span models, by subject: `submissions` (create, grade, sweep) and `learning` (what a
learner does with a question: reveals, quick checks, ratings, verdicts, bookmarks and notes)."""
