"""File formats in and out: platforms, mappings, layouts, schedules, model parameters.

Every reader turns a bad file into one :class:`~commcost.errors.InputError`
that names the file, the line or field, and what was expected.
"""
