"""Where updates come in: the Telegram bot (polling or webhook) and the local console.

Imports `grove.core` and `grove.store`; a channel is handed the turn to run (`process`), it does not import the app.
"""
