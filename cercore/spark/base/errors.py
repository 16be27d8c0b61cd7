"""Errors cercore raises inside Spark's workers, given back to the user as the
``CercoreError`` they are: Spark wraps a worker's exception in its own (``PythonException``,
with the worker's traceback and often a JVM stack trace around the message);
``cercore_errors()`` re-raises it as the cercore error class and message the worker raised,
the hint on top, Spark's exception kept as the cause.

    with cercore.spark.cercore_errors():
        rows = aggregate(events, query, schema=decl).collect()
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

from cercore import errors

_RAISED = re.compile(r"cercore\.errors\.(\w+): ")


def from_worker(exc: BaseException) -> errors.CercoreError | None:
    """The cercore error a Spark exception carries from a worker (the last one its text
    names), or None when it carries none."""
    text = str(exc)
    found = list(_RAISED.finditer(text))
    if not found:
        return None
    last = found[-1]
    cls = getattr(errors, last.group(1), None)
    if not (isinstance(cls, type) and issubclass(cls, errors.CercoreError)):
        cls = errors.CercoreError
    message = text[last.end():]
    for tail in ("\n\tat ", "\nJVM stacktrace:", "\n\n"):  # what Spark appends after it
        message = message.split(tail, 1)[0]
    try:
        return cls(message.strip())
    except TypeError:  # a class that needs more than a message
        return errors.CercoreError(message.strip())


@contextlib.contextmanager
def cercore_errors() -> Iterator[None]:
    """Run Spark actions (``collect``, ``show``, ``write``) so that an error cercore raised
    in a worker reaches the caller as that ``CercoreError``, not as Spark's wrapper."""
    try:
        yield
    except errors.CercoreError:
        raise
    except Exception as exc:
        err = from_worker(exc) if type(exc).__module__.startswith(("pyspark", "py4j")) \
            else None
        if err is None:
            raise
        raise err from exc
