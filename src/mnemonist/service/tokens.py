"""The named tokens of a store (store/api_tokens.py) as the faces use them: the API's
boundary looks up a presented token on every request (api/tokens.py), and `mnemonist token`
makes, lists, revokes and rotates them on the home's store, with or without a daemon
(cli/token_cmd.py). The faces import no store module; this is their door to the tokens.
"""

from __future__ import annotations

from typing import Any

from mnemonist.store import api_tokens
from mnemonist.store.api_tokens import SERVER_NAME, TokenError, TokenRecord, check_name
from mnemonist.store.backend import is_postgres

__all__ = ["SERVER_NAME", "TokenError", "TokenRecord", "TokenRegistry", "check_name"]


class TokenRegistry:
    """The named tokens of one store: a running daemon's, or a home's opened by the CLI.
    Writes run in a write transaction of their own; a `TokenError` says what cannot be done
    (a bad or taken name, an unknown or revoked token)."""

    def __init__(self, db: Any) -> None:
        self.db = db

    @property
    def remote(self) -> bool:
        """Whether a lookup is a round trip to a server (PostgreSQL): run it off the event
        loop."""
        return is_postgres(self.db)

    # -- reads ---------------------------------------------------------------------------------
    def any_made(self) -> bool:
        """Whether a token was ever made here (revoked ones count)."""
        return api_tokens.any_made(self.db.reader())

    def find(self, secret: str) -> TokenRecord | None:
        """The token `secret` is, revoked or not; None for one never made."""
        return api_tokens.find(self.db.reader(), secret)

    def by_name(self, name: str) -> TokenRecord | None:
        return api_tokens.by_name(self.db.reader(), name)

    def all(self) -> list[TokenRecord]:
        return api_tokens.all_tokens(self.db.reader())

    # -- writes --------------------------------------------------------------------------------
    def add(self, name: str, *, user_id: str | None = None, agent_id: str | None = None,
            owner: bool = False) -> tuple[TokenRecord, str]:
        """A new token: its row and the token itself, shown once by the caller."""
        with self.db.write_tx() as conn:
            return api_tokens.add(conn, name, user_id=user_id, agent_id=agent_id, owner=owner)

    def revoke(self, name: str) -> TokenRecord:
        with self.db.write_tx() as conn:
            return api_tokens.revoke(conn, name)

    def rotate(self, name: str) -> tuple[TokenRecord, str]:
        """A new secret for the live token `name`; the old one stops working."""
        with self.db.write_tx() as conn:
            return api_tokens.rotate(conn, name)
