"""The work behind each command, as plain functions a script calls (the command line parses and calls them).

Each takes one options dataclass (its fields are the command's options, by
their long names; :func:`.options.from_namespace` builds one from parsed
arguments) and returns a plain result: :func:`.calibrate.calibrate`,
:func:`.verify.verify`, :func:`.tune.tune`, :func:`.mapping_search.search_mapping`,
:func:`.arrange.arrange`, :func:`.selection_grid.select_grid`,
:func:`.evaluate.evaluate_selection`, :func:`.fit.fit_measurements`,
:func:`.predict.predict`. :mod:`commcost.api` exports them with the main
path's functions; docs/api.md is the tutorial. This layer imports
:mod:`commcost.launch` (what starts MPI) and everything below, never the
command line.
"""
