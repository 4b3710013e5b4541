"""The ``commcost`` command line: parsing, dispatch, exit codes."""
