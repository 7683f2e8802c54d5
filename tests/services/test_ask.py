"""/ask's answerer on a real SQLite file: retrieval within a topic and a time, the cited sentences, the rate
limits on the injected clock, and questions it must refuse."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from bot.ask.limits import AskRateLimited
from bot.ask.question import InvalidQuestion, InvalidSince
from bot.clock import FakeClock
from bot.errors import PaperwatchError
from bot.models import Author, Paper
from tests.factories import BASE_TIME, make_paper
from tests.services.world import World

HACKING = make_paper(
    1,
    title="Mitigating reward hacking in RLHF with ensemble reward models",
    abstract=(
        "Reinforcement learning from human feedback is prone to reward hacking. "
        "We show that an ensemble of reward models reduces reward hacking by penalising disagreement. "
        "Experiments on summarisation confirm the gains."
    ),
)
DECODING = make_paper(
    2,
    title="Speculative decoding with draft trees",
    abstract=(
        "Speculative decoding accelerates inference of large language models. "
        "A small draft model proposes a tree of tokens which the target model verifies in parallel."
    ),
)
OLD_HACKING = make_paper(
    3,
    title="Reward hacking in early preference learning",
    abstract="Reward hacking was first observed when policies exploited a learned reward model's errors.",
    published=BASE_TIME - timedelta(days=400),
)


async def test_ask_quotes_the_sentences_that_answer_and_cites_their_papers(world: World) -> None:
    await world.intake.store_papers([HACKING, DECODING, OLD_HACKING], announce=False)
    answer = await world.services.ask.ask("  How can   reward hacking be reduced? ")
    assert answer.question == "How can reward hacking be reduced?"
    assert answer.statements, answer
    best = answer.statements[0]
    assert best.text == (
        "We show that an ensemble of reward models reduces reward hacking by penalising disagreement."
    )
    assert answer.papers[best.sources[0] - 1].arxiv_id == HACKING.arxiv_id
    assert DECODING.arxiv_id not in {p.arxiv_id for p in answer.papers}  # shares no word with the question
    # Every citation names a listed paper, and every listed paper is cited.
    cited = {n for s in answer.statements for n in s.sources}
    assert cited == set(range(1, len(answer.papers) + 1))


async def test_ask_within_a_time_leaves_older_papers_out(world: World, clock: FakeClock) -> None:
    await world.intake.store_papers([HACKING, OLD_HACKING], announce=False)
    clock.advance((BASE_TIME + timedelta(days=1) - clock.now()).total_seconds())
    since = world.services.ask.since("30d")
    assert since == BASE_TIME + timedelta(days=1) - timedelta(days=30)
    answer = await world.services.ask.ask("reward hacking", since=since)
    assert [p.arxiv_id for p in answer.papers] == [HACKING.arxiv_id]
    everything = await world.services.ask.ask("reward hacking")
    assert {p.arxiv_id for p in everything.papers} == {HACKING.arxiv_id, OLD_HACKING.arxiv_id}


async def test_ask_within_a_topic_reads_its_papers_and_its_sub_topics(world: World) -> None:
    await world.intake.store_papers([HACKING, DECODING, OLD_HACKING], announce=False)
    topics = world.services.topics
    parent, _ = await topics.save_custom(77, "Inference Speed", "ti:decoding OR ti:inference")
    await topics.save_custom(77, "Preference Work", "ti:rlhf", parent="Inference Speed")
    answer = await world.services.ask.ask("reward hacking", topic=parent, guild_id=77)
    assert [p.arxiv_id for p in answer.papers] == [HACKING.arxiv_id]  # via the sub-topic; the old one is out
    assert answer.topic == "Inference Speed"


async def test_ask_says_when_nothing_stored_is_about_the_question(world: World) -> None:
    await world.intake.store_papers([DECODING], announce=False)
    answer = await world.services.ask.ask("axolotl regeneration")
    assert answer.papers == () and answer.statements == ()


@pytest.mark.parametrize(
    ("question", "says"),
    [("   ", "Ask a question in words"), ("x" * 2000, "2,000 characters"), ("what is the?", "no word")],
)
async def test_ask_refuses_empty_huge_and_wordless_questions(world: World, question: str, says: str) -> None:
    with pytest.raises(InvalidQuestion, match=says):
        await world.services.ask.ask(question)


@pytest.mark.parametrize("since", ["2026-02-30", "last week", "0d", "9999y"])
def test_since_refuses_what_is_not_a_day_or_a_span(world: World, since: str) -> None:
    with pytest.raises(InvalidSince, match="YYYY-MM-DD"):
        world.services.ask.since(since)


def test_rate_limits_per_member_and_per_server_follow_the_clock(world: World, clock: FakeClock) -> None:
    ask = world.services.ask
    for _ in range(4):
        ask.admit(1, 10)
    with pytest.raises(AskRateLimited, match="You have asked a lot just now: try again in 60 s"):
        ask.admit(1, 10)
    clock.advance(30)
    with pytest.raises(AskRateLimited, match="try again in 30 s"):
        ask.admit(1, 10)
    for member in range(11, 27):  # other members of the server fill its allowance
        ask.admit(1, member)
    with pytest.raises(AskRateLimited, match="This server has"):
        ask.admit(1, 99)
    with pytest.raises(AskRateLimited, match="You have"):
        ask.admit(2, 10)  # a member's limit holds in every server
    ask.admit(2, 11)  # another server has its own allowance
    clock.advance(31)
    ask.admit(1, 10)  # the window has moved on


# ---- /brief ------------------------------------------------------------------------------------------------


def _brief_papers(now: datetime) -> list[Paper]:
    rising = [
        make_paper(
            500 + i,
            title=f"Draft tree verification for speculative decoding {i}",
            abstract="Speculative decoding of language models with draft tree verification is fast.",
            authors=(Author("Grace Hopper", ("Yale University",)), Author(f"Student {i}")),
            published=now - timedelta(days=2 + i),
        )
        for i in range(5)
    ]
    steady = [
        make_paper(
            520 + i,
            title=f"Speculative decoding baselines {i}",
            abstract="Speculative decoding of language models with a small draft model.",
            authors=(Author(f"Other {i}"),),
            published=now - timedelta(days=40 + 3 * i),  # the eight weeks before the period
        )
        for i in range(6)
    ]
    early = make_paper(540, title="Speculative decoding from long ago", published=now - timedelta(days=200))
    return [*rising, *steady, early]


async def test_brief_finds_rising_phrases_active_authors_and_the_periods_papers(
    world: World, clock: FakeClock
) -> None:
    papers = _brief_papers(clock.now())
    await world.intake.store_papers(papers, announce=False)
    topic, _ = await world.services.topics.save_custom(9, "Spec Decoding", "ti:speculative")
    brief = await world.services.ask.brief(topic, 4, guild_id=9)
    assert (brief.papers_now, brief.papers_before) == (5, 6)  # the early paper is in neither window
    assert brief.before == brief.start - timedelta(weeks=8) and brief.end == clock.now()
    assert brief.rising[0].phrase == "draft tree verification" and (
        brief.rising[0].now,
        brief.rising[0].before,
    ) == (5, 0)
    assert all(r.phrase != "speculative decoding" for r in brief.rising)  # as common before: not rising
    assert brief.authors[0] == ("Grace Hopper", 5)
    assert brief.institutions == (("Yale University", 5),)
    assert len(brief.representative) == 3
    assert {p.arxiv_id for p in brief.representative} <= {p.arxiv_id for p in papers[:5]}


async def test_brief_of_a_quiet_topic_and_out_of_range_weeks(world: World) -> None:
    topic, _ = await world.services.topics.save_custom(9, "Quiet", "ti:axolotl")
    brief = await world.services.ask.brief(topic, 2, guild_id=9)
    assert brief.papers_now == 0 and brief.rising == () and brief.representative == ()
    with pytest.raises(PaperwatchError, match="from 1 to 12"):
        await world.services.ask.brief(topic, 13, guild_id=9)
