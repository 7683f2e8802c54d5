"""Discord and arXiv on 127.0.0.1, each a real server on a loopback socket: the real bot (discord.py, httpx,
the store) runs against them unchanged. `python -m bot demo` shows a newcomer the whole bot with them, the tests
drive faults through them, and bench/ measures the bot under load against them.

`arxiv` (with `atom`, the pages it writes) serves the API and RSS; `discord` the REST API and the gateway;
`harness` runs a PaperBot pointed at both.
"""
