"""User-facing errors: one clear message saying what went wrong, where, and how to fix it.

The CLI turns a :class:`NegbenchError` into that message and a non-zero exit; anything else is a
bug and keeps its traceback.
"""
from __future__ import annotations


class NegbenchError(Exception):
    """An error caused by the user's input or environment, not by a bug in negbench."""

    exit_code = 2

    def __init__(self, what: str, *, where: str | None = None, fix: str | None = None):
        self.what, self.where, self.fix = what, where, fix
        super().__init__(self.render())

    def render(self) -> str:
        lines = [f"error: {self.what}"]
        if self.where:
            lines.append(f"  where: {self.where}")
        if self.fix:
            lines.append(f"  fix:   {self.fix}")
        return "\n".join(lines)


class DataError(NegbenchError):
    """A malformed data file or record (names the file, the record and the field)."""

    def __init__(self, what: str, *, path: str, record: str | int | None = None,
                 field: str | None = None, fix: str | None = None):
        where = str(path)
        if record is not None:
            where += f", record {record}"
        if field is not None:
            where += f", field '{field}'"
        super().__init__(what, where=where, fix=fix)
        self.path, self.record, self.field = path, record, field


class ModelError(NegbenchError):
    """A model that cannot be found or loaded."""


class TaskError(NegbenchError):
    """An unknown task, mode or protocol setting."""


class OutputError(NegbenchError):
    """An output folder or cache that cannot be written."""
