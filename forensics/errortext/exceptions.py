"""What a job caught, as the text the error-text reader classifies.

A notebook hands `explain_error` the exception object itself: delta-spark's `delta.exceptions`
classes (plain, captured from the JVM, or Spark Connect's), a PySpark captured exception
wrapping a Delta error, deltalake's `CommitFailedError`, a `traceback.TracebackException`, or
any exception whose `__cause__` / `__context__` chain holds one of those. They are told apart
by class name along `type(e).__mro__` and by their text, never by `isinstance`: delta-spark
4.4's `ConcurrentAppendException` is not a subclass of its `DeltaConcurrentModificationException`,
PySpark has a second (captured) family, and neither package need be importable here.

Nothing here calls into a JVM that may be gone: a captured exception's own fields (`_desc`,
`_stackTrace`) are read first, and every method call is guarded.
"""

from __future__ import annotations

import traceback
from typing import Any

from forensics.errortext.patterns import EXCEPTION_RULE

MAX_CHAIN = 16  # exceptions followed along __cause__ / __context__
# Class names that say "a Delta commit conflict" whatever their package.
CONFLICT_CLASSES = frozenset({*EXCEPTION_RULE, "DeltaConcurrentModificationException", "CommitFailedError"})


def is_exception_input(error: object) -> bool:
    """Whether `error` is something `error_text` reads as an exception rather than as text."""
    return isinstance(error, (BaseException, traceback.TracebackException))


def error_text(error: object) -> str:
    """The text of an error as the error-text reader takes it: text as given (bytes decoded), an
    exception as `package.Class: message` with its stack trace, followed by its causes."""
    if isinstance(error, str):
        return error
    if isinstance(error, (bytes, bytearray)):
        return bytes(error).decode("utf-8", errors="replace")
    if isinstance(error, traceback.TracebackException):
        return "".join(error.format())
    if isinstance(error, BaseException):
        return "\nCaused by: ".join(_one(e) for e in chain(error))
    return _guarded(lambda: str(error)) or ""


def chain(error: BaseException) -> list[BaseException]:
    """The exception, then what led to it (`__cause__`, `__context__` and a captured exception's
    converted JVM cause, breadth first), each once, at most MAX_CHAIN."""
    out: list[BaseException] = []
    seen: set[int] = set()
    todo: list[BaseException] = [error]
    while todo and len(out) < MAX_CHAIN:
        e = todo.pop(0)
        if id(e) in seen:
            continue
        seen.add(id(e))
        out.append(e)
        for nxt in (e.__cause__, e.__context__, _attr(e, "_cause")):
            if isinstance(nxt, BaseException) and id(nxt) not in seen:
                todo.append(nxt)
    return out


def conflict_class(error: BaseException) -> str | None:
    """`package.Class` of the first class along the MRO whose name is a Delta conflict's, else None."""
    for cls in type(error).__mro__:
        if cls.__name__ in CONFLICT_CLASSES:
            return f"{cls.__module__}.{cls.__name__}"
    return None


def _one(e: BaseException) -> str:
    """One exception: its (conflict) class name, message and stack trace, without touching a JVM."""
    cls = type(e)
    name = conflict_class(e) or (cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}")
    message = _message(e)
    cond = _attr(e, "_errorClass")
    if isinstance(cond, str) and cond and f"[{cond.split('.')[0]}" not in message:  # Connect keeps the class apart
        message = f"[{cond}] {message}"
    trace = _trace(e)
    out = f"{name}: {message}"
    return out + ("\n" + trace if trace and trace.strip() not in message else "")


def _message(e: BaseException) -> str:
    # A captured exception's description (the JVM message), PySpark's and Spark Connect's own
    # message, then what str() gives (PySpark's __str__ may need the JVM: guarded), then the args.
    for attr in ("_desc", "_message", "desc", "message"):
        v = _attr(e, attr)
        if isinstance(v, str) and v.strip():
            return v
    s = _guarded(lambda: str(e))
    if s:
        return s
    return " ".join(str(a) for a in e.args if isinstance(a, (str, int))) if e.args else ""


def _trace(e: BaseException) -> str | None:
    """The JVM stack trace a captured exception carries (it names the Delta exception and its causes)."""
    for attr in ("_stackTrace", "_stacktrace"):
        v = _attr(e, attr)
        if isinstance(v, str) and v.strip():
            return v
    return None


def _attr(obj: Any, name: str) -> Any:
    try:
        return getattr(obj, name, None)
    except Exception:  # noqa: BLE001 - a property that needs a JVM
        return None


def _guarded(f: Any) -> str | None:
    try:
        s = f()
    except Exception:  # noqa: BLE001 - PySpark's methods assert a live JVM
        return None
    return s if isinstance(s, str) else None
