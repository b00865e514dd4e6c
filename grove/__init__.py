"""The service around the nodes: the kernel (core), its own tables (store), the launchers of the
processes it runs beside itself (infra), where updates come in (channels) and the application on
top (app). See `tests/test_layout.py` for what each may import.
"""
