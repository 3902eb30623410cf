"""What a search may see: the scope rule as SQL (pure: builds text and parameters, no I/O).

The rule: the current Space plus profile-wide memory, never another Space
(and never another profile, which is another database). Assertions must also be approved and
unexpired, current or believed at ``as_of``; memories about the person only with consent and only
when the current embedding model has embedded them (a model change drops them from recall
rather than letting them rank with stale vectors).
"""

from __future__ import annotations

from typing import Any

import msgspec


class Scope(msgspec.Struct, frozen=True, kw_only=True):
    """The view of one search or listing.

    ``space_id``: the current Space (None: outside any Space, so profile-wide memory only).
    ``person_memory``: whether approved memories about the person are recalled (consent).
    ``as_of``: reconstruct what was believed at that time instead of what is current; chunks
    that occurred after it are left out too.
    """

    space_id: int | None = None
    person_memory: bool = True
    as_of: float | None = None


def chunk_filter(scope: Scope, alias: str = "c") -> tuple[str, dict[str, Any]]:
    """A WHERE fragment over ``chunks AS alias`` and its named parameters."""
    sql = f"({alias}.space_id IS NULL OR {alias}.space_id = :scope_space)"
    params: dict[str, Any] = {"scope_space": scope.space_id}
    if scope.as_of is not None:
        sql += f" AND {alias}.occurred_at <= :scope_as_of"
        params["scope_as_of"] = scope.as_of
    return sql, params


def assertion_filter(
    scope: Scope, *, now: float, model_id: str | None, alias: str = "a"
) -> tuple[str, dict[str, Any]]:
    """A WHERE fragment over ``assertions AS alias`` and its named parameters.

    ``model_id`` is the current embedding model (None: no embedder, so no model condition).
    """
    at = scope.as_of if scope.as_of is not None else now
    parts = [
        f"({alias}.space_id IS NULL OR {alias}.space_id = :scope_space)",
        f"{alias}.review_status = 'approved'",
        f"({alias}.expires_at IS NULL OR {alias}.expires_at > :scope_at)",
    ]
    params: dict[str, Any] = {"scope_space": scope.space_id, "scope_at": at}
    if scope.as_of is None:
        parts.append(f"{alias}.invalidated_at IS NULL")
    else:
        parts.append(
            f"{alias}.occurred_at <= :scope_at"
            f" AND ({alias}.invalidated_at IS NULL OR {alias}.invalidated_at > :scope_at)"
        )
    if not scope.person_memory:
        parts.append(f"{alias}.about_person = 0")
    elif model_id is not None:
        parts.append(
            f"({alias}.about_person = 0 OR EXISTS (SELECT 1 FROM embeddings AS scope_e"
            f" WHERE scope_e.owner_kind = 'assertion' AND scope_e.owner_id = {alias}.id"
            f" AND scope_e.model_id = :scope_model))"
        )
        params["scope_model"] = model_id
    return " AND ".join(parts), params
