"""The ``pdeagent`` command line (typer + rich), one module per subcommand group."""
