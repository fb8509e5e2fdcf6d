"""Every model that crosses HTTP between the service and the client, in one package: a module
per concept (runs, rows, compare, trajectory, knowledge, resources, dbgpt, testsets, pages), every
name re-exported here. It imports only pydantic, the standard library and ``ragmeter.errors``, so
the client loads neither the server (FastAPI, SQLAlchemy) nor the engine (numpy, faiss, openai)
to read an answer."""

from __future__ import annotations

from ragmeter.wire.compare import MetricComparison, RowPair, RowPairPage, Scatter, ScatterPoint
from ragmeter.wire.dbgpt import (
    DbgptContentUpload,
    DbgptDataset,
    DbgptEvaluation,
    DbgptMembersUpdate,
    DbgptPage,
    DbgptStartRequest,
    PageMetricInfo,
)
from ragmeter.wire.knowledge import (
    LOCAL_ORIGIN,
    UPLOAD_ORIGIN,
    AddOut,
    ChunkInfo,
    ChunkingConfig,
    ChunkingStrategy,
    DocumentInfo,
    HitOut,
    SpaceInfo,
)
from ragmeter.wire.lineage import DatasetDiff, LineageChange, RunChanges, RunUpdate
from ragmeter.wire.pages import Page
from ragmeter.wire.resources import AppOut, DatasetOut, ModelOut, PromptOut, TrecDatasetOut
from ragmeter.wire.rows import (
    MetricDistribution,
    NullReason,
    RowContext,
    RowDetail,
    RowResult,
    RowScore,
    RowView,
)
from ragmeter.wire.runs import (
    EvaluateServeRequest,
    MetricInfo,
    ResultItem,
    RunCreated,
    RunInfo,
    RunState,
    SceneInfo,
)
from ragmeter.wire.testsets import TestsetCreate, TestsetJob, TestsetState
from ragmeter.wire.trajectory import (
    ArgumentDiff,
    Trajectory,
    TrajectoryCall,
    TrajectoryPair,
    TrajectoryStep,
)

__all__ = [
    "LOCAL_ORIGIN",
    "UPLOAD_ORIGIN",
    "AddOut",
    "AppOut",
    "ArgumentDiff",
    "ChunkInfo",
    "ChunkingConfig",
    "ChunkingStrategy",
    "DatasetDiff",
    "DatasetOut",
    "DbgptContentUpload",
    "DbgptDataset",
    "DbgptEvaluation",
    "DbgptMembersUpdate",
    "DbgptPage",
    "DbgptStartRequest",
    "DocumentInfo",
    "EvaluateServeRequest",
    "HitOut",
    "LineageChange",
    "MetricComparison",
    "MetricDistribution",
    "MetricInfo",
    "ModelOut",
    "NullReason",
    "Page",
    "PageMetricInfo",
    "PromptOut",
    "ResultItem",
    "RowContext",
    "RowDetail",
    "RowPair",
    "RowPairPage",
    "RowResult",
    "RowScore",
    "RowView",
    "RunChanges",
    "RunCreated",
    "RunInfo",
    "RunState",
    "RunUpdate",
    "Scatter",
    "ScatterPoint",
    "SceneInfo",
    "SpaceInfo",
    "TestsetCreate",
    "TestsetJob",
    "TestsetState",
    "Trajectory",
    "TrajectoryCall",
    "TrajectoryPair",
    "TrajectoryStep",
    "TrecDatasetOut",
]
