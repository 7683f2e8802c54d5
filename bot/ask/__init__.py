"""Answering from the stored papers: a question's words (question), the papers worth reading (retrieval), the
sentences of their abstracts that answer it (sentences), what moved in a topic (trends), and the optional
language model (llm, grounding) that writes a cited answer from the same abstracts.

Extractive by default: every answer is made of the papers' own sentences, each cited. The services
(bot/services/ask.py) put these together; the renderer (bot/render/answer.py) makes the result safe to show."""
