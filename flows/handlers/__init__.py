"""The main flow's handlers, one module each: what answers a command, a button or a message.

Each returns its replies and sends nothing (`flows/handle_update.py` routes to them).
"""
