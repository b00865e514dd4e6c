"""The service's own tables: the connection pool and turns (`db`), the inbox, the outbox, background jobs.

Imports only `grove.core`.
"""
