"""From fragments to an answer: the LLM client, window fitting, the answer template and its policy and guards, the one answer pipeline, citations and quotes, plans for complex questions, the consultation's culture and prompt.

Imports everything below it, never `flows` or the app.
"""
