"""Closed forms of collective costs: models of whole algorithms (paper 004) and fast formulas for regular schedules."""
