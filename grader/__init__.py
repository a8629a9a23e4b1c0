"""The grader's sandbox. Imports nothing from Django; see README.md.

Only the client is imported here (standard library only, Python 3.11+), so Django can use
``from grader import SandboxPool`` without torch; everything else runs in the grader's
own interpreter.
"""

from grader.client import SandboxError, SandboxPool

__all__ = ["SandboxError", "SandboxPool"]
