"""Solver contracts shared by tracks (SPEC §5), independent of any FEM library."""
