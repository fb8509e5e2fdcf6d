"""Judge cards: a judge's agreement with people on a human-labelled suite (per language and
per the suite's tasks and models), with its cost and latency, kept in the store and shown
beside every score that judge made."""

from ragmeter.runs.cards.card import CardRequirement, check_requirement, parse_requirement
from ragmeter.runs.cards.make import CardRequest, CardSuite, card_suite, make_card
from ragmeter.runs.storage.cards import CardStore, StoredCard, headline, judge_model_of

__all__ = [
    "CardRequest",
    "CardRequirement",
    "CardStore",
    "CardSuite",
    "StoredCard",
    "card_suite",
    "check_requirement",
    "headline",
    "judge_model_of",
    "make_card",
    "parse_requirement",
]
