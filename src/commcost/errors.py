"""The one error type a user sees: bad input, named by file, place and expectation."""

from __future__ import annotations


class InputError(Exception):
    """Bad input from a user's file or command line.

    The CLI prints ``str(error)`` as one line and exits with code 2, so the
    message names where the problem is (file, line or field) and what was
    expected there.
    """

    def __init__(self, message: str, *, source: str | None = None, where: str | None = None) -> None:
        self.message = message
        self.source = source
        self.where = where
        super().__init__(self.__str__())

    def located(self, source: str | None = None, where: str | None = None) -> "InputError":
        """Return the same error with a file and a place filled in where still unknown."""
        return InputError(
            self.message,
            source=self.source or source,
            where=self.where or where,
        )

    def __str__(self) -> str:
        head = ":".join(part for part in (self.source, self.where) if part)
        return f"{head}: {self.message}" if head else self.message


class InputWarning(UserWarning):
    """Input that loads but deserves a look (a measured table that breaks a model's constraints). The CLI
    prints it as one line, ``commcost: warning: FILE: ...``, and goes on."""
