"""The use cases, one module per area. Cogs and the command line call these and render what they return; the
services are the only callers of the store, the topic index and the sources (through the intake, for papers).

Each service checks its input once and raises the project's own errors (bot/errors.py and the errors next to
each service), whose messages say what to do.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from bot.ask.llm import ChatModel
from bot.clock import Clock
from bot.config import Settings
from bot.intake import Intake
from bot.services.ask import AskService
from bot.services.follows import FollowService
from bot.services.history import HistoryService
from bot.services.momentum import MomentumService
from bot.services.ratings import RatingService
from bot.services.saved import SavedService
from bot.services.similar import SimilarService
from bot.services.status import StatusService
from bot.services.topics import TopicLimits, TopicService
from bot.sources.arxiv_api import ArxivClient
from bot.store import Store
from bot.topics.index import TopicIndex
from bot.topics.scorer_training import LearnedScorer

__all__ = [
    "AskService",
    "FollowService",
    "HistoryService",
    "MomentumService",
    "RatingService",
    "SavedService",
    "Services",
    "SimilarService",
    "StatusService",
    "TopicService",
]


@dataclass(frozen=True)
class Services:
    topics: TopicService  # finding topics, a server's own topics within its limits
    follows: FollowService  # follow, unfollow, what a server follows
    history: HistoryService  # latest, search, every match of a query, one paper by id
    momentum: MomentumService  # one topic's momentum, a server's topics ranked
    status: StatusService  # what /status shows, the counts the CLI prints
    ask: AskService  # /ask and /brief: answers from the stored papers, with sources
    ratings: RatingService  # 👍 / 👎 on cards, per server and topic
    saved: SavedService  # members' reading lists
    similar: SimilarService  # the stored papers nearest to one

    @classmethod
    def build(
        cls,
        *,
        store: Store,
        index: TopicIndex,
        arxiv: ArxivClient,
        intake: Intake,
        clock: Clock,
        settings: Settings,
        limits: TopicLimits | None = None,
        scorer: LearnedScorer | None = None,
        model: ChatModel | None = None,
    ) -> Services:
        limits = limits or TopicLimits()
        topics = TopicService(store, index, clock, limits, scorer)
        return cls(
            topics=topics,
            follows=FollowService(store, topics, clock),
            history=HistoryService(store, index, arxiv, intake, limits, clock),
            momentum=MomentumService(store, index, clock, settings.arxiv_categories),
            status=StatusService(store, clock, timedelta(minutes=settings.poll_interval_minutes), index),
            ask=AskService(store, index, clock, model=model),  # model: LLM_BASE_URL's, if set
            ratings=RatingService(store, clock),
            saved=SavedService(store, clock),
            similar=SimilarService(store, scorer),
        )
