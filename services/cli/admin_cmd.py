"""`leaflab admin …`: users, keys and projects through the admin API."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import click

from services.cli.admin_mcp_cmd import mcp_servers
from services.cli.admin_models_cmd import models
from services.cli.budget_cmd import budget, spend
from services.cli.client import LeaflabClient


@click.group()
def admin() -> None:
    """Administer users, API keys and projects."""


@admin.command("bootstrap")
@click.argument("email")
def bootstrap(email: str) -> None:
    """Create the first admin on the database and print their API key once.

    For deployments that `leaflab up` does not start (docker compose, Kubernetes):
    run where LEAFLAB_DATABASE_URL points at the database, e.g.
    `docker compose exec api leaflab admin bootstrap you@lab.org`. Over HTTP no key
    exists yet to authorise it, so it is a command on the database only.
    """
    # Imported here: the ORM is for this command only, not every `leaflab admin`.
    from services.api.operator import bootstrap_first_admin
    from services.common.settings import CommonSettings

    key = bootstrap_first_admin(CommonSettings().require_database_url(), email=email)
    if key is None:
        raise click.ClickException(
            f"{email} already exists: no key was made (an admin makes more keys with "
            "`leaflab admin key create`)"
        )
    click.echo(f"created admin {email}; their API key (shown once):", err=True)
    click.echo(key)


@admin.group()
def user() -> None:
    """Users."""


@user.command("create")
@click.argument("email")
@click.option("--admin", "is_admin", is_flag=True, help="make the user an administrator")
def user_create(email: str, is_admin: bool) -> None:
    created = LeaflabClient().request(
        "POST", "/v1/admin/users", json={"email": email, "is_admin": is_admin}
    )
    click.echo(f"created user {created['email']} ({created['id']})")


@user.command("invite")
@click.argument("email")
@click.option(
    "--expires-hours",
    type=click.IntRange(1, 24 * 30),
    default=72,
    show_default=True,
    help="the link stops working after",
)
def user_invite(email: str, expires_hours: int) -> None:
    """Print a one-time link with which EMAIL makes their own first key (made a member if new)."""
    client = LeaflabClient()
    listing = client.request("GET", "/v1/admin/users")["items"]
    if not any(u["email"].lower() == email.lower() for u in listing):
        client.request("POST", "/v1/admin/users", json={"email": email, "is_admin": False})
        click.echo(f"created user {email}", err=True)
    invite = client.request(
        "POST",
        f"/v1/admin/users/{_user_id(client, email)}/invites",
        json={"expires_hours": expires_hours},
    )
    click.echo(f"invite for {invite['email']}, works once, until {invite['expires_at']}:", err=True)
    click.echo(invite["url"])


@user.command("list")
def user_list() -> None:
    """Every user, with the disk their workspaces use of the per-user cap."""
    listing = LeaflabClient().request("GET", "/v1/admin/users")
    cap = _mb(int(listing.get("user_disk_cap_bytes", 0)))
    for u in listing["items"]:
        disk = f"disk {_mb(int(u.get('disk_bytes', 0)))} / {cap}"
        click.echo(f"{u['id']}  {u['email']}  {disk}{'  (admin)' if u['is_admin'] else ''}")


def _mb(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MB"


@admin.group()
def key() -> None:
    """API keys."""


@key.command("create")
@click.argument("email")
@click.option("--name", help="a label for the key")
@click.option("--project", help="limit the key to this project (name or id)")
@click.option("--expires-days", type=click.IntRange(min=1), help="the key stops working after")
def key_create(email: str, name: str | None, project: str | None, expires_days: int | None) -> None:
    """Create a key for EMAIL; it is printed once and never shown again."""
    client = LeaflabClient()
    body: dict[str, object] = {"name": name, "project": project}
    if expires_days is not None:
        body["expires_at"] = (datetime.now(UTC) + timedelta(days=expires_days)).isoformat()
    created = client.request("POST", f"/v1/admin/users/{_user_id(client, email)}/keys", json=body)
    click.echo(created["key"])


@key.command("list")
@click.argument("email")
def key_list(email: str) -> None:
    """EMAIL's keys: prefix, scope, expiry, last use (never the key itself)."""
    client = LeaflabClient()
    for k in client.request("GET", f"/v1/admin/users/{_user_id(client, email)}/keys")["items"]:
        state = "revoked" if k["revoked_at"] else f"expires {k['expires_at'] or 'never'}"
        click.echo(
            f"{k['id']}  {k['prefix']}…  {k['name'] or '-'}  project={k['project_id'] or '-'}"
            f"  {state}  last used {k['last_used_at'] or 'never'}"
        )


@key.command("revoke")
@click.argument("email")
@click.argument("key_id")
def key_revoke(email: str, key_id: str) -> None:
    client = LeaflabClient()
    client.request("DELETE", f"/v1/admin/users/{_user_id(client, email)}/keys/{key_id}")
    click.echo(f"revoked {key_id}")


def _user_id(client: LeaflabClient, email: str) -> str:
    users = client.request("GET", "/v1/admin/users")["items"]
    match = [u for u in users if u["email"] == email.strip().lower()]
    if not match:
        raise click.ClickException(f"no user {email}")
    return str(match[0]["id"])


def _project_id(client: LeaflabClient, name: str) -> str:
    projects = client.request("GET", "/v1/admin/projects")["items"]
    match = [p for p in projects if name in (p["name"], p["id"])]
    if not match:
        raise click.ClickException(f"no project {name}")
    return str(match[0]["id"])


@admin.group()
def project() -> None:
    """Projects."""


@project.command("create")
@click.argument("name")
@click.option(
    "--allow-network", is_flag=True, help="let sandboxes of this project reach the network"
)
def project_create(name: str, allow_network: bool) -> None:
    created = LeaflabClient().request(
        "POST", "/v1/admin/projects", json={"name": name, "allow_network": allow_network}
    )
    click.echo(f"created project {created['name']} ({created['id']}); you are its owner")


@project.command("add-member")
@click.argument("name")
@click.argument("email")
@click.option("--role", type=click.Choice(["member", "owner"]), default="member")
def project_add_member(name: str, email: str, role: str) -> None:
    """Add EMAIL to NAME as member (reads its jobs) or owner (also changes them)."""
    client = LeaflabClient()
    client.request(
        "POST",
        f"/v1/admin/projects/{_project_id(client, name)}/members",
        json={"email": email, "role": role},
    )
    click.echo(f"{email} is now {role} of {name}")


@admin.command("prices")
def prices() -> None:
    """The model price table of this host's configuration, with each price's source
    (configured, gpu_derived, default)."""
    from services.worker.operator import price_table, price_table_lines

    for line in price_table_lines(price_table()):
        click.echo(line)


@project.command("remove-member")
@click.argument("name")
@click.argument("email")
def project_remove_member(name: str, email: str) -> None:
    """Remove EMAIL from project NAME; their keys scoped to it are revoked."""
    client = LeaflabClient()
    pid, uid = _project_id(client, name), _user_id(client, email)
    client.request("DELETE", f"/v1/admin/projects/{pid}/members/{uid}")
    click.echo(f"{email} is no longer in {name}")


@project.command("members")
@click.argument("name")
def project_members(name: str) -> None:
    client = LeaflabClient()
    for m in client.request("GET", f"/v1/admin/projects/{_project_id(client, name)}/members")[
        "items"
    ]:
        click.echo(f"{m['email']}  {m['role']}")


admin.add_command(budget)
admin.add_command(spend)
admin.add_command(models)
admin.add_command(mcp_servers)
