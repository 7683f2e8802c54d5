"""Every Discord limit the bot writes against, in one place (characters = Unicode code points, as Discord's API
counts them). https://discord.com/developers/docs/resources/message and .../resources/channel#embed-limits"""

from __future__ import annotations

from typing import Final

# A message
CONTENT_LIMIT: Final = 2000  # message content
EMBEDS_PER_MESSAGE: Final = 10
EMBED_TOTAL_LIMIT: Final = 6000  # title, description, fields, footer and author of all embeds together

# An embed
TITLE_LIMIT: Final = 256
DESCRIPTION_LIMIT: Final = 4096
FIELDS_PER_EMBED: Final = 25
FIELD_NAME_LIMIT: Final = 256
FIELD_VALUE_LIMIT: Final = 1024
FOOTER_LIMIT: Final = 2048
AUTHOR_NAME_LIMIT: Final = 256
URL_LIMIT: Final = 512  # embed and link-button URLs

# Components, threads, slash commands
BUTTON_LABEL_LIMIT: Final = 80
CUSTOM_ID_LIMIT: Final = 100  # a component's custom_id
SELECT_OPTIONS: Final = 25  # options of one select menu
SELECT_OPTION_LIMIT: Final = 100  # an option's label, value and description
SELECT_PLACEHOLDER_LIMIT: Final = 150
THREAD_NAME_LIMIT: Final = 100  # a thread's or forum post's name
AUTOCOMPLETE_CHOICES: Final = 25  # choices in one autocomplete answer
CHOICE_NAME_LIMIT: Final = 100  # an autocomplete choice's name
CHOICE_VALUE_LIMIT: Final = 100  # and its value

# The bot's own, not Discord's: one line of a list.
COMPACT_LINE_LIMIT: Final = 300
