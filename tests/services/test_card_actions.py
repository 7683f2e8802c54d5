"""The services behind a card's buttons and /saved: who a vote is for, what a click on a card that lost its
paper or follow answers, a reading list and its BibTeX."""

from __future__ import annotations

import bibtexparser
import pytest

from bot.services.ratings import NothingToRate, PaperGone
from bot.services.saved import EmptyList, NotAnArxivId, NotSaved
from tests.factories import make_paper
from tests.services.world import World

pytestmark = pytest.mark.both_back_ends  # through the Store protocol only

GUILD, OTHER, CHANNEL, ALICE = 1, 2, 11, 100


async def _followed(world: World, query: str = "ti:reinforcement") -> int:
    services = world.services
    await services.follows.follow(await services.follows.plan(GUILD, CHANNEL, "Bandits", query=query))
    topic = await services.topics.resolve(GUILD, "Bandits")
    return topic.id


async def test_a_vote_rates_the_followed_topic_holding_the_paper_once_per_member(world: World) -> None:
    topic_id = await _followed(world)
    paper = make_paper(1)  # "... on reinforcement learning"
    await world.intake.store_papers([paper], announce=True)
    ratings = world.services.ratings
    first = await ratings.rate(
        guild_id=GUILD, channel_ids=[CHANNEL], member_id=ALICE, arxiv_id=paper.arxiv_id, vote=1
    )
    assert [t.id for t in first.topics] == [topic_id] and first.earlier == (None,) and not first.unchanged
    again = await ratings.rate(
        guild_id=GUILD, channel_ids=[CHANNEL], member_id=ALICE, arxiv_id=paper.arxiv_id, vote=1
    )
    assert again.unchanged
    changed = await ratings.rate(
        guild_id=GUILD, channel_ids=[CHANNEL], member_id=ALICE, arxiv_id=paper.arxiv_id, vote=-1
    )
    assert changed.earlier == (1,)
    assert await ratings.counts(GUILD, [topic_id]) == {topic_id: 1}
    topic = await world.services.topics.resolve(GUILD, "Bandits")
    [rated] = await ratings.rated(GUILD, topic)
    assert (rated.up, rated.down) == (0, 1)
    assert await ratings.reset(GUILD, topic) == 1
    assert await ratings.counts(GUILD, [topic_id]) == {topic_id: 0}


async def test_a_vote_without_a_followed_topic_or_paper_says_what_to_do(world: World) -> None:
    await _followed(world)
    held, unheld = make_paper(1), make_paper(2, title="Sheep herding", abstract="Dogs.")
    await world.intake.store_papers([held, unheld], announce=True)
    ratings = world.services.ratings
    with pytest.raises(NothingToRate, match="not in any topic this server follows"):
        await ratings.rate(
            guild_id=GUILD, channel_ids=[CHANNEL], member_id=ALICE, arxiv_id=unheld.arxiv_id, vote=1
        )
    with pytest.raises(NothingToRate):  # a member of another server
        await ratings.rate(
            guild_id=OTHER, channel_ids=[CHANNEL], member_id=ALICE, arxiv_id=held.arxiv_id, vote=1
        )
    with pytest.raises(PaperGone, match=r"/paper 2611\.99999"):
        await ratings.rate(
            guild_id=GUILD, channel_ids=[CHANNEL], member_id=ALICE, arxiv_id="2611.99999", vote=1
        )
    await world.services.follows.unfollow(await world.services.follows.plan_unfollow(GUILD, "Bandits"))
    with pytest.raises(NothingToRate):  # the follow (and with it the server's topic) is gone
        await ratings.rate(
            guild_id=GUILD, channel_ids=[CHANNEL], member_id=ALICE, arxiv_id=held.arxiv_id, vote=1
        )


async def test_a_reading_list_saves_removes_and_exports(world: World) -> None:
    papers = [make_paper(n) for n in (1, 2, 3)]
    await world.intake.store_papers(papers, announce=False)
    saved = world.services.saved
    with pytest.raises(EmptyList):
        await saved.bibtex(ALICE)
    for paper in papers:
        assert await saved.save(ALICE, paper.arxiv_id)
    assert not await saved.save(ALICE, papers[0].arxiv_id)
    with pytest.raises(PaperGone):
        await saved.save(ALICE, "2611.99999")
    assert await saved.remove(ALICE, f"https://arxiv.org/abs/{papers[1].arxiv_id}v3") == papers[1].arxiv_id
    with pytest.raises(NotSaved):
        await saved.remove(ALICE, papers[1].arxiv_id)
    with pytest.raises(NotAnArxivId):
        await saved.remove(ALICE, "not an id")
    text, count = await saved.bibtex(ALICE)
    entries = bibtexparser.parse_string(text).entries
    assert count == 2 and [e["eprint"] for e in entries] == [papers[2].arxiv_id, papers[0].arxiv_id]


async def test_similar_finds_the_papers_sharing_the_papers_subject_first(world: World) -> None:
    from tests.factories import GRPO

    near = [
        make_paper(
            10 + n,
            title=f"GRPO variant {n} for math reasoning",
            abstract="Group relative policy optimization with verifiable rewards improves reasoning.",
        )
        for n in range(6)
    ]
    far = [
        make_paper(30 + n, title=f"Legged robot {n}", abstract="Quadruped locomotion with PPO in simulation.")
        for n in range(20)
    ]
    await world.intake.store_papers([GRPO, *near, *far], announce=False)
    found = await world.services.similar.similar(GRPO.arxiv_id)
    assert found.paper.arxiv_id == GRPO.arxiv_id
    assert len(found.nearest) == 5
    assert {p.arxiv_id for p, _ in found.nearest} <= {p.arxiv_id for p in near}
    scores = [score for _, score in found.nearest]
    assert scores == sorted(scores, reverse=True) and scores[0] > 0
    with pytest.raises(PaperGone):
        await world.services.similar.similar("2611.99999")
