"""Apps, the targets of the ``app`` scene: ``RagApp`` (space + prompt + model), ``HttpApp``
(the user's endpoint), ``CallableApp`` (a Python function) and ``ToolAgent`` (a chat model
calling the user's tools).

Names load on first use: a run with no app target needs only the error and policy types."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragmeter._lazy import lazy_names

if TYPE_CHECKING:
    from ragmeter.apps._hosts import HostPolicy
    from ragmeter.apps.agent import ToolAgent
    from ragmeter.apps.base import App, AppAnswer, AppError, AppRefused, CallableApp, as_answer
    from ragmeter.apps.configs import AppConfig, CallableAppConfig, HttpAppConfig, RagAppConfig
    from ragmeter.apps.http import HttpApp
    from ragmeter.apps.policy import AppPolicy
    from ragmeter.apps.rag import RAG_ANSWER_TEMPLATES, RagApp
    from ragmeter.apps.store import AppStore, build_app

__getattr__ = lazy_names(
    __name__,
    {
        "ragmeter.apps._hosts": ["HostPolicy"],
        "ragmeter.apps.agent": ["ToolAgent"],
        "ragmeter.apps.base": [
            "App",
            "AppAnswer",
            "AppError",
            "AppRefused",
            "CallableApp",
            "as_answer",
        ],
        "ragmeter.apps.configs": [
            "AppConfig",
            "CallableAppConfig",
            "HttpAppConfig",
            "RagAppConfig",
        ],
        "ragmeter.apps.http": ["HttpApp"],
        "ragmeter.apps.policy": ["AppPolicy"],
        "ragmeter.apps.rag": ["RAG_ANSWER_TEMPLATES", "RagApp"],
        "ragmeter.apps.store": ["AppStore", "build_app"],
    },
)

__all__ = [
    "RAG_ANSWER_TEMPLATES",
    "App",
    "AppAnswer",
    "AppConfig",
    "AppError",
    "AppPolicy",
    "AppRefused",
    "AppStore",
    "CallableApp",
    "CallableAppConfig",
    "HostPolicy",
    "HttpApp",
    "HttpAppConfig",
    "RagApp",
    "RagAppConfig",
    "ToolAgent",
    "as_answer",
    "build_app",
]
