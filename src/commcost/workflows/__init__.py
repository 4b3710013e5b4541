"""The work behind each command, as plain functions: tune, calibrate, verify, select, evaluate, fit, map, arrange."""
