"""The compiled part of ragmeter (everything else is configured in pyproject.toml).

The exact relevance judge is built when a C compiler is there; without one the install still
succeeds and the same judgements come from the pure-Python path (slower).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "ragmeter.metrics.retrieval._exact",
            sources=["src/ragmeter/metrics/retrieval/_exact.c"],
            optional=True,
        )
    ]
)
