"""The kernel: settings, message shapes, and how work is observed (runs, stages, the Prefect reporter).

Imports nothing of grove's other packages, of nodes or of flows.
"""
