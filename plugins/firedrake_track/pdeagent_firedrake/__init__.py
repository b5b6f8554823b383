"""pdeagent track plugin for Firedrake: NOT IMPLEMENTED YET.

The package exists so the layout and its entry point are in place; it registers
no track and implements no hook, so `pdeagent tracks list` does not show Firedrake
until the track is built (issue #8).
"""
