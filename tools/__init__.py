"""Build tools that run outside the service: the model assembler (`python -m tools.model_install`)."""
