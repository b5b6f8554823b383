"""Staged evaluation of one submission for one case on one track."""
