"""One error type for everything a user can get wrong; the CLI prints it without a traceback."""
from __future__ import annotations


class UnbagError(Exception):
    """A user-facing error: the message names the file, line and field at fault where there is one."""


def where(path: object, line: int | None = None, field: str | None = None) -> str:
    """'path:line: field 'x'' prefix for error messages."""
    out = str(path)
    if line is not None:
        out += f":{line}"
    if field is not None:
        out += f": field '{field}'"
    return out


class UnbagWarning(UserWarning):
    """Something a user should know about a result that is still computed (the CLI prints it)."""


def warn(message: str) -> None:
    """Warn through Python's `warnings` (the CLI shows it as `unbag: warning: ...`)."""
    import warnings
    warnings.warn(message, UnbagWarning, stacklevel=3)
