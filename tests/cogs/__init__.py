"""Slash-command cogs, driven through the real client against the loopback Discord."""
