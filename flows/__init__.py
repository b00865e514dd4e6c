"""Prefect flows, one per workflow. Flows are plain functions composed of nodes."""
