"""``/v1/admin/mcp-servers``: the MCP tool servers agent jobs are offered (admins only).

GET shows the list in force and where it comes from; PUT replaces the stored
list whole (validated exactly as ``LEAFLAB_MCP_SERVERS``; a bad entry is a 422
naming it and the field, and nothing is stored); DELETE clears the stored list
so the env one applies again. Workers pick a change up within
``LEAFLAB_MCP_RELOAD_S`` for jobs that start after it, without a restart.
"""

from __future__ import annotations

from fastapi import APIRouter

from services.api.admin.mcp_servers import service
from services.api.admin.mcp_servers.schemas import McpServerListIn, McpServerListOut
from services.api.deps import AdminUser, DbSession
from services.api.errors import error_responses
from services.common.contracts.errors import ServiceError
from services.common.mcp_servers import McpConfigError, McpServersSetting

router = APIRouter(tags=["admin"], responses=error_responses(401, 403, 422))


@router.get("/mcp-servers", response_model=McpServerListOut)
def get_mcp_servers(db: DbSession, _: AdminUser) -> McpServerListOut:
    return service.current(db, env=McpServersSetting())


@router.put("/mcp-servers", response_model=McpServerListOut)
def put_mcp_servers(body: McpServerListIn, db: DbSession, admin: AdminUser) -> McpServerListOut:
    """Replace the stored list (an empty list turns every server off)."""
    try:
        service.replace(db, servers=body.servers, by=admin.id)
    except McpConfigError as exc:
        raise ServiceError(422, "invalid_mcp_servers", str(exc)) from None
    return service.current(db, env=McpServersSetting())


@router.delete("/mcp-servers", response_model=McpServerListOut)
def delete_mcp_servers(db: DbSession, admin: AdminUser) -> McpServerListOut:
    """Clear the stored list: LEAFLAB_MCP_SERVERS applies again."""
    service.replace(db, servers=None, by=admin.id)
    return service.current(db, env=McpServersSetting())
