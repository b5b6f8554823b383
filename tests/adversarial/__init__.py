"""Hostile submissions through the real pipeline on every sandbox backend (issue #9)."""
