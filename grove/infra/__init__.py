"""Launchers of the processes grove runs beside itself: embedded Postgres, the Prefect server, the local LLM server.

Imports only `grove.core`.
"""
