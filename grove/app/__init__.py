"""The application: the command line, `grove up`, dispatch of turns in per-user lanes, the worker, the served deployments.

The top layer: it may import everything.
"""
