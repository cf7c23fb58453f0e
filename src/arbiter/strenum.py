"""The one string-enum base: members are ``str`` (JSON-ready, compare equal to their value).

``str(member)`` and ``f"{member}"`` give the value, so a member can be written to JSON, a
message or a CLI choice as is. See ``docs/codec.md`` ("Codes").
"""

from __future__ import annotations

import enum
import sys

if sys.version_info >= (3, 11):
    _Base = enum.StrEnum
else:  # pragma: no cover - Python 3.10
    class _Base(str, enum.Enum):
        def __str__(self) -> str:
            return self.value

        def __format__(self, spec: str) -> str:
            return self.value.__format__(spec)


class StrEnum(_Base):
    """A string enum: ``Outcome.AC == "AC"``, ``json.dumps(Outcome.AC) == '"AC"'``.

    Values are given explicitly (never ``auto()``, whose lower-casing differs between Python
    versions)."""

    @classmethod
    def values(cls) -> tuple[str, ...]:
        """The members' values, in definition order."""
        return tuple(m.value for m in cls)

    @classmethod
    def parse(cls, text: str, what: str = ""):
        """The member whose value is ``text``; ``ValueError`` naming ``what`` and the known values."""
        try:
            return cls(text)
        except ValueError:
            label = f"{what} " if what else ""
            raise ValueError(f"unknown {label}{text!r}; known: {', '.join(cls.values())}") from None


__all__ = ["StrEnum"]
