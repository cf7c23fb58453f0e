"""Tenants and their tokens, from a token file or the environment (no database): each line
``NAME TOKEN [judges=N] [queue=N] [weight=W] [metrics=all]``. A request's ``Authorization: Bearer
TOKEN`` names its tenant; ``metrics=all`` lets it read every tenant's series on ``/metrics``. See ``docs/serve.md``, "Tenants and fairness"."""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass
from pathlib import Path

from arbiter.server.admission import Tenant

#: The tenant of every request when the service has no token (loopback only).
ANONYMOUS = "anonymous"
#: The tenant of ``--token`` / ``ARBITER_TOKEN``.
DEFAULT = "default"
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_FIELDS = {"judges": int, "queue": int, "weight": float}


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest()


@dataclass(frozen=True)
class Tenants:
    """Who may call the service. ``by_digest``: sha256(token) -> tenant; empty means no auth
    (every request is :data:`ANONYMOUS`, with ``anonymous``'s caps)."""

    by_digest: tuple[tuple[bytes, Tenant], ...] = ()
    anonymous: Tenant = Tenant(ANONYMOUS)
    #: Tenants that read every tenant's series on ``/metrics`` (``metrics=all``); the others read their own.
    operators: frozenset[str] = frozenset()

    def sees_all_metrics(self, tenant: Tenant) -> bool:
        """Whether ``tenant`` reads every tenant's series: an operator, or the one tenant of a
        service with at most one token."""
        return len(self.by_digest) <= 1 or tenant.name in self.operators

    @property
    def required(self) -> bool:
        return bool(self.by_digest)

    def names(self) -> list[str]:
        return [t.name for _, t in self.by_digest] or [ANONYMOUS]

    def find(self, authorization: bytes) -> Tenant | None:
        """The tenant of an ``Authorization`` header (``Bearer TOKEN``), else ``None``. Every
        digest is compared (constant time, whichever matches)."""
        if not self.by_digest:
            return self.anonymous
        text = authorization.decode("latin-1")
        if not text.startswith("Bearer "):
            return None
        digest, found = _digest(text[7:]), None
        for known, tenant in self.by_digest:
            if hmac.compare_digest(known, digest):
                found = tenant
        return found

    @classmethod
    def single(cls, token: str, **caps) -> "Tenants":
        return cls(((_digest(token), Tenant(DEFAULT, **caps)),))


def parse(text: str, origin: str = "tokens") -> Tenants:
    """The tenants of a token file's text (``#`` comments, blank lines). Raises ``ValueError``
    naming the line for a bad name, a duplicate name or token, an unknown or bad field."""
    entries: list[tuple[bytes, Tenant]] = []
    names: set[str] = set()
    operators: set[str] = set()
    for n, raw in enumerate(text.replace(";", "\n").splitlines(), 1):
        words = raw.split("#", 1)[0].split()
        if not words:
            continue
        where = f"{origin} line {n}"
        if len(words) < 2 or not _NAME.match(words[0]):
            raise ValueError(f"{where}: expected 'NAME TOKEN [judges=N] [queue=N] [weight=W] [metrics=all]' "
                             f"(NAME: letters, digits, _ . -)")
        name, token, caps = words[0], words[1], {}
        for word in words[2:]:
            key, _, value = word.partition("=")
            if key == "metrics" and value in ("all", "own"):
                operators.update([name] if value == "all" else [])
                continue
            if key not in _FIELDS:
                raise ValueError(f"{where}: unknown field {word!r}; known: {', '.join(_FIELDS)}, metrics=all|own")
            try:
                caps[key] = _FIELDS[key](value)
            except ValueError:
                raise ValueError(f"{where}: {key}={value!r} is not a number") from None
            if not caps[key] > 0:
                raise ValueError(f"{where}: {key} must be positive, got {value}")
        digest = _digest(token)
        if name in names or any(d == digest for d, _ in entries):
            raise ValueError(f"{where}: tenant {name!r} or its token appears twice")
        names.add(name)
        entries.append((digest, Tenant(name, **caps)))
    if not entries:
        raise ValueError(f"{origin}: no tenants (lines 'NAME TOKEN [judges=N] [queue=N] [weight=W] [metrics=all]')")
    return Tenants(tuple(entries), operators=frozenset(operators))


def load(path: str | Path) -> Tenants:
    """The tenants of a token file (see :func:`parse`)."""
    return parse(Path(path).read_text(), origin=str(path))
