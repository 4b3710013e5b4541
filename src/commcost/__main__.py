"""``python -m commcost`` runs the command-line interface."""

from commcost.cli.main import entry

entry()
