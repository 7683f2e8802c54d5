"""New papers are scored in the scorer's child process: the bot's own process reads each topic's status and
threshold but no weights, suggestions are still posted after a restart, the child decides as the trained model
does on the labelled set, and a child that dies mid-scoring stops no poll: the page is scored in the bot's own
process (its weights let go of after), its suggestion posted once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from bot.clock import FakeClock
from bot.loopback.arxiv import LoopbackArxiv
from bot.loopback.discord import MANAGE_GUILD, VIEW_CHANNEL
from bot.loopback.discord.records import SEND_MESSAGES, USE_APPLICATION_COMMANDS
from bot.loopback.harness import running_paperbot
from bot.render import SUGGESTED_NOTE
from bot.topics import scorer_jobs, scorer_store
from bot.topics.catalog import load_catalog
from bot.topics.relevance import DEFAULT_LABELS, load_labels
from bot.topics.scorer import paper_text
from bot.topics.scorer_worker import ScorerWorker
from tests.factories import make_paper
from tests.fakes.checked_discord import FakeDiscord
from tests.peek import store_of
from tests.topics.scorer_corpus import ELSEWHERE, UNSAID, corpus
from tests.topics.scorer_helpers import die, trained_on_labels

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
ADMIN = VIEW_CHANNEL | SEND_MESSAGES | USE_APPLICATION_COMMANDS | MANAGE_GUILD
TOPIC = "Error Correction"
QUERY = '"quantum error correction"'


class KilledScoring(ScorerWorker):
    """A real child process, killed as soon as it starts scoring a page."""

    async def run(self, job: Any, *args: object, **kwargs: object) -> Any:
        return await super().run(die if job is scorer_jobs.suggest else job, *args, **kwargs)


async def test_the_scoring_process_decides_as_the_trained_model_on_the_labelled_set(tmp_path: Path) -> None:
    scorers, _, rows = trained_on_labels()
    model = tmp_path / "model.npz"
    scorer_store.save(scorers, model)
    labels = load_labels(DEFAULT_LABELS, load_catalog())
    texts = [paper_text(p.title, p.abstract) for p in labels.papers.values()]  # the rows' order
    queries = {key: scorer.query for key, scorer in scorers.topics.items()}

    found = await ScorerWorker(0).run(scorer_jobs.suggest, model, texts, queries)

    in_process = {key: np.flatnonzero(s.suggests(rows)).tolist() for key, s in scorers.topics.items()}
    assert found == {key: flags for key, flags in in_process.items() if flags}
    assert all(
        found.get(key) for key in queries
    )  # every topic suggests some labelled papers: a real comparison
    light = scorer_store.load(model, weights=False)  # what the bot's process reads
    assert light is not None and light.trained_on == frozenset()
    assert all(s.scored and s.coef is None for s in light.topics.values())
    assert np.array_equal(light.featurizer.idf, scorers.featurizer.idf)


async def test_suggestions_are_posted_after_a_restart_and_a_dying_scoring_child_stops_no_poll(
    tmp_path: Path,
) -> None:
    clock = FakeClock(NOW)
    async with FakeDiscord() as discord, LoopbackArxiv() as arxiv:
        guild = discord.add_guild("Lab")
        channel = discord.add_text_channel(guild, "suggested")
        admin = discord.add_member(guild, "admin", permissions=ADMIN)
        async with running_paperbot(tmp_path, discord, arxiv, clock=clock) as bot:
            await bot.ctx.intake.store_papers(corpus(), announce=False)
            options = {"topic": TOPIC, "query": QUERY, "match": "suggested"}
            given = [{"name": k, "value": v} for k, v in options.items()]
            await (await discord.invoke(guild, channel, admin, "follow", given)).wait_response()
            await bot.services.topics.retrain()
            assert (await bot.ctx.ingestor().poll_once()).complete  # a fresh install's first poll: history

        async with running_paperbot(tmp_path, discord, arxiv, clock=clock) as bot:  # a restart
            topic = await bot.services.topics.find(guild.id, TOPIC)
            scorer = bot.services.topics.scorer
            assert topic is not None and scorer is not None and scorer.scorers is not None
            assert bot.services.topics.scorer_status(topic).scored
            assert all(s.coef is None for s in scorer.scorers.topics.values())  # no weights in this process
            unsaid = make_paper(
                5001, title=UNSAID.title, abstract=UNSAID.abstract, published=NOW - timedelta(1)
            )
            other = make_paper(
                5002, title=ELSEWHERE.title, abstract=ELSEWHERE.abstract, published=NOW - timedelta(1)
            )
            arxiv.papers = [unsaid, other]

            scorer.scoring = KilledScoring(0)  # its child dies on every page
            polled = await bot.ctx.ingestor().poll_once()
            assert polled.complete and set(polled.new) == {unsaid.arxiv_id, other.arxiv_id}  # the polls go on
            store = store_of(bot)
            assert await store.topics.suggested_among([topic.id], [unsaid.arxiv_id, other.arxiv_id])
            assert scorer_jobs._held is None  # scored in this process, the weights let go of after
            await bot.worker.deliver_once()

            scorer.scoring = ScorerWorker(0)
            clock.advance(1800)
            again = await bot.ctx.ingestor().poll_once()  # the same papers served again: nothing new
            assert again.complete and again.new == []
            await bot.worker.deliver_once()
            cards = [m["embeds"][0] for m in discord.messages(channel.id) if m.get("embeds")]
            posted = [card["url"] for card in cards if card["url"] in (unsaid.abs_url, other.abs_url)]
            assert posted == [unsaid.abs_url]  # once, marked as a suggestion
            assert SUGGESTED_NOTE in cards[-1]["footer"]["text"]
        assert discord.violations == []
