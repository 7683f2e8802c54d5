"""Follows: the plan checks everything before anything changes, the follow upsert, and unfollowing."""

from __future__ import annotations

import pytest

from bot.services.follows import FollowError
from bot.services.topics import TopicError, UnknownTopic
from bot.topics.catalog import load_catalog
from tests.factories import make_paper
from tests.services.world import World

GUILD, PAPERS, OTHER = 5, 50, 51
RL = "RL Post-Training"


async def catalog_world(world: World) -> World:
    await world.index.start([t for t in load_catalog() if t.name == RL])
    return world


async def test_following_a_catalog_topic_and_changing_how_it_posts(world: World) -> None:
    follows = (await catalog_world(world)).services.follows
    done = await follows.follow(await follows.plan(GUILD, PAPERS, "rl post-training", created_by=9))
    assert done.topic.name == RL and done.is_new and not done.created_topic and not done.changed_query
    assert (done.follow.channel_id, done.follow.mode, done.follow.digest_hour) == (PAPERS, "each", 8)

    again = await follows.follow(await follows.plan(GUILD, PAPERS, RL, mode="digest", digest_hour=6))
    assert not again.is_new and (again.follow.mode, again.follow.digest_hour) == ("digest", 6)
    assert [(f.topic_name, f.channel_id, f.mode) for f in await follows.in_server(GUILD)] == [
        (RL, PAPERS, "digest")
    ]
    assert await follows.in_server(GUILD + 1) == []


@pytest.mark.parametrize(
    ("options", "error", "says"),
    [
        ({"digest_hour": 24}, FollowError, "0 to 23"),
        ({"digest_hour": -1}, FollowError, "0 to 23"),
        ({"mode": "hourly"}, FollowError, "each or digest"),
        ({"topic": "x" * 81}, TopicError, "1 to 80 characters"),
        ({"topic": "   "}, TopicError, "1 to 80 characters"),
        ({"topic": "No Such Topic"}, UnknownTopic, "no topic named “No Such Topic”"),
        ({"topic": "Mine", "query": "q" * 501}, TopicError, "at most 500 characters"),
    ],
)
async def test_a_bad_request_is_refused_before_anything_changes(
    world: World, options: dict[str, object], error: type[Exception], says: str
) -> None:
    follows = (await catalog_world(world)).services.follows
    request: dict[str, object] = {"topic": RL, **options}
    topic = str(request.pop("topic"))
    with pytest.raises(error, match=says):
        await follows.plan(GUILD, PAPERS, topic, **request)  # type: ignore[arg-type]
    assert await follows.in_server(GUILD) == [] and await world.services.topics.own(GUILD) == []


async def test_a_query_creates_the_servers_topic_and_a_new_query_names_the_channels_it_changes(
    world: World,
) -> None:
    await world.intake.store_papers([make_paper(1, title="Sparse attention kernels")], announce=False)
    follows = world.services.follows
    created = await follows.follow(await follows.plan(GUILD, PAPERS, "Sparse", query="ti:sparse"))
    assert created.created_topic and created.is_new and created.matched == 1
    assert created.topic.guild_id == GUILD and created.topic.query == "ti:sparse"
    await follows.follow(await follows.plan(GUILD, OTHER, "Sparse"))

    change = await follows.plan(GUILD, PAPERS, "sparse", query="ti:sparse AND ti:kernels")
    assert change.changed_topic == created.topic and sorted(change.guarded) == [PAPERS, OTHER]
    changed = await follows.follow(change)
    assert changed.changed_query and not changed.created_topic and not changed.is_new
    assert changed.topic.query == "ti:sparse AND ti:kernels" and changed.matched == 1

    same = await follows.plan(GUILD, PAPERS, "Sparse", query="ti:sparse AND ti:kernels")
    assert same.changed_topic is None and same.guarded == ()  # the same query changes nobody's posts


async def test_the_terminal_follows_a_topic_it_found(world: World) -> None:
    await catalog_world(world)
    topic = await world.services.topics.resolve(0, RL)
    follow, is_new = await world.services.follows.follow_topic(0, -topic.id, topic, digest_hour=0)
    assert is_new and follow.channel_id == -topic.id and follow.mode == "each"
    with pytest.raises(FollowError):
        await world.services.follows.follow_topic(0, -topic.id, topic, digest_hour=99)


async def test_unfollowing_one_channel_then_all_then_deleting_the_servers_topic(world: World) -> None:
    follows, topics = world.services.follows, world.services.topics
    for channel in (PAPERS, OTHER):
        await follows.follow(await follows.plan(GUILD, channel, "Sparse", query="ti:sparse"))

    one = await follows.plan_unfollow(GUILD, "Sparse", PAPERS)
    assert [f.channel_id for f in one.ending] == [PAPERS] and not one.ends_every_follow
    assert not one.deletes_topic
    with pytest.raises(FollowError, match="still followed"):
        await follows.delete_topic(one)
    assert await follows.unfollow(one) == 1

    rest = await follows.plan_unfollow(GUILD, "Sparse")
    assert [f.channel_id for f in rest.ending] == [OTHER] and rest.ends_every_follow
    assert await follows.unfollow(rest) == 1
    assert await topics.find(GUILD, "Sparse") is not None  # unfollowed, not deleted

    gone = await follows.plan_unfollow(GUILD, "Sparse")
    assert gone.deletes_topic and gone.ending == []
    await follows.delete_topic(gone)
    assert await topics.find(GUILD, "Sparse") is None
    with pytest.raises(UnknownTopic):
        await follows.plan_unfollow(GUILD, "Sparse")


async def test_a_catalog_topic_is_never_deleted(world: World) -> None:
    follows = (await catalog_world(world)).services.follows
    plan = await follows.plan_unfollow(GUILD, RL)
    assert not plan.deletes_topic and plan.ending == []
    with pytest.raises(FollowError):
        await follows.delete_topic(plan)
