"""Every model that crosses HTTP between the service and the client, in one package: a module
per concept (runs, rows, compare, trajectory, knowledge, resources, dbgpt, testsets, pages), every
name re-exported here. It imports only pydantic, the standard library and ``ragmeter.errors``, so
the client loads neither the server (FastAPI, SQLAlchemy) nor the engine (numpy, faiss, openai)
to read an answer."""
