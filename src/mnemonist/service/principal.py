"""Who a request is when the store has named tokens (`mnemonist token add`): the token decides.

The boundary (`api/tokens.py`) turns a request's token into a `Principal` once; every face
(the HTTP routes through `api/deps.py`, the MCP tools, the dashboard) then runs the request's
identity claims through it:

- a **non-owner** token is bound to a user and/or an agent. A claim (`agent_id`, `user_id`,
  `agents`, `users`, from a header, the query string, a body or tool arguments) naming anyone
  else, `*` included, is a 403 `identity_mismatch` that names both the token's identity and
  the claim. With no claim, the token's identity applies: a read sees global memories and
  the token's own.
- an **owner** token (`--owner`, and `server.token`) acts as anyone it names and reads every
  scope it asks for; where it names nobody, its own identity (if it has one) applies.

Without named tokens there is no principal, and identity claims work as they always did.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from mnemonist.service.errors import Forbidden

#: (the one-id field, the list field, what it names)
DIMENSIONS = (("user_id", "users", "user"), ("agent_id", "agents", "agent"))


@dataclass(frozen=True)
class Principal:
    """A request's token: its name, whether it is an owner's, the identity it binds, and the
    daemon that answered (both recorded in history as `actor`)."""

    name: str
    owner: bool = False
    user_id: str | None = None
    agent_id: str | None = None
    daemon: str = "mnemonist"

    @property
    def actor(self) -> str:
        """What history records as `changed_by`: the token and the daemon it came through."""
        return f"token:{self.name} via {self.daemon}"

    def identity(self) -> dict[str, str]:
        return {k: v for k, v in (("user_id", self.user_id), ("agent_id", self.agent_id)) if v}

    def acting_as(self, kind: str | None = None) -> str:
        """`user 'bob'`, `user 'bob' and agent 'ci'`; `kind` ("user" / "agent") is said even
        when the token binds none (`user 'bob' and no agent`)."""
        parts = [f"{k} {getattr(self, one)!r}" if getattr(self, one) else f"no {k}"
                 for one, _, k in DIMENSIONS if getattr(self, one) or k == kind]
        return " and ".join(parts) or "no user or agent"

    def bind(self, claims: Mapping[str, Any], where: Mapping[str, str] | None = None
             ) -> dict[str, Any]:
        """The identity a request runs as, from what it claims (`where`: field -> where the
        claim came from, for the message). Raises Forbidden for a claim this token may not
        make."""
        out = {k: v for k, v in claims.items() if v is not None}
        for one, many, _kind in DIMENSIONS:
            mine = getattr(self, one)
            if self.owner:
                if one not in out and mine:
                    out[one] = mine
                continue
            claimed = out.get(one)
            if claimed is not None and _name(claimed) != mine:
                raise self.refusal(one, claimed, (where or {}).get(one))
            listed = _names(out.get(many))
            if listed and any(item != mine for item in listed):
                raise self.refusal(many, listed, (where or {}).get(many))
            if mine:
                out[one] = mine
        return out

    def check_owners(self, owners: Mapping[str, Any], where: str = "body") -> None:
        """A write's owner fields (`agent_id`, `user_id` of a remember, an import item, a
        stated relation): a non-owner token makes a memory private to itself only."""
        if self.owner:
            return
        for one, _, _kind in DIMENSIONS:
            value = owners.get(one)
            if value is not None and _name(value) != getattr(self, one):
                raise self.refusal(one, value, where)

    def require_owner(self, what: str) -> None:
        """What reads or writes every scope at once (a backup, a bundle import, an export of
        every scope, the dashboard) is an owner's alone."""
        if not self.owner:
            raise Forbidden(f"{what} needs an owner token; this request's token {self.name!r}"
                            " is not one (`mnemonist token add NAME --owner`)",
                            code="owner_only", token=self.name)

    def refusal(self, field: str, claimed: Any, where: str | None) -> Forbidden:
        """403 `identity_mismatch` naming both the claim and the token's identity."""
        kind = "user" if field in ("user_id", "users") else "agent"
        return Forbidden(
            f"{field}: the {where or 'request'} names {_shown(claimed)}, but this request's"
            f" token {self.name!r} acts as {self.acting_as(kind)}; only an owner token acts as"
            " someone else or reads other scopes", code="identity_mismatch", field=field,
            token=self.name, token_identity={"user_id": self.user_id, "agent_id": self.agent_id},
            claimed=claimed)


def _name(value: Any) -> Any:
    """A claimed id as the request models keep it (trimmed), for comparison."""
    return value.strip() if isinstance(value, str) else value


def _names(value: Any) -> list[Any] | None:
    """A claimed list of scopes (a list, or "a,b" as the query string and the models take
    it), trimmed."""
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, Iterable):
        return [value]
    return [_name(item) for item in items]


def _shown(value: Any) -> str:
    if isinstance(value, Iterable) and not isinstance(value, str):
        return "[" + ", ".join(repr(v) for v in value) + "]"
    return repr(value)
