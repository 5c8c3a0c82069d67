"""The host's own command group (`flask microblog add-user ...`)."""

import click
from flask import Blueprint

from .extensions import db
from .models import User

bp = Blueprint("cli", __name__, cli_group="microblog")


@bp.cli.command("add-user")
@click.argument("username")
@click.argument("password")
@click.option("--admin", is_flag=True)
def add_user(username, password, admin):
    """Add a user who can sign in."""
    user = User(username=username, is_admin=admin)
    user.set_password(password)
    db.session.add(user)
    db.session.commit()
    click.echo(f"Added {username}.")
