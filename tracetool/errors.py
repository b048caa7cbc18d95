"""The one exception type whose message reaches the user as a single line."""


class ToolError(Exception):
    """A problem the user can fix; the CLI prints ``error: <message>`` and exits non-zero."""
