"""`leaflab admin …`: users, keys and projects through the admin API."""

from __future__ import annotations

import click

from services.cli.budget_cmd import budget, spend
from services.cli.client import LeaflabClient


@click.group()
def admin() -> None:
    """Administer users, API keys and projects."""


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


@user.command("list")
def user_list() -> None:
    for u in LeaflabClient().request("GET", "/v1/admin/users")["items"]:
        click.echo(f"{u['id']}  {u['email']}{'  (admin)' if u['is_admin'] else ''}")


@admin.group()
def key() -> None:
    """API keys."""


@key.command("create")
@click.argument("email")
@click.option("--name", help="a label for the key")
def key_create(email: str, name: str | None) -> None:
    """Create a key for EMAIL; it is printed once and never shown again."""
    client = LeaflabClient()
    users = client.request("GET", "/v1/admin/users")["items"]
    match = [u for u in users if u["email"] == email.strip().lower()]
    if not match:
        raise click.ClickException(f"no user {email}")
    created = client.request("POST", f"/v1/admin/users/{match[0]['id']}/keys", json={"name": name})
    click.echo(created["key"])


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
    click.echo(f"created project {created['name']} ({created['id']})")


@project.command("add-member")
@click.argument("name")
@click.argument("email")
@click.option("--role", type=click.Choice(["member", "admin"]), default="member")
def project_add_member(name: str, email: str, role: str) -> None:
    client = LeaflabClient()
    projects = client.request("GET", "/v1/admin/projects")["items"]
    match = [p for p in projects if p["name"] == name]
    if not match:
        raise click.ClickException(f"no project {name}")
    client.request(
        "POST", f"/v1/admin/projects/{match[0]['id']}/members", json={"email": email, "role": role}
    )
    click.echo(f"{email} is now {role} of {name}")


admin.add_command(budget)
admin.add_command(spend)
