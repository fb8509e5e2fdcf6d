"""The compiled part of ragmeter (everything else is configured in pyproject.toml).

The reader of the usual agent rows and the typed keys of tool calls are built when a C
compiler is there; without one the install still succeeds and the
same results come from the pure-Python paths (slower).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "ragmeter.datasets._agent_read",
            sources=["src/ragmeter/datasets/_agent_read.c"],
            optional=True,
        ),
        Extension(
            "ragmeter.metrics.agent._keys",
            sources=["src/ragmeter/metrics/agent/_keys.c"],
            optional=True,
        ),
    ]
)
