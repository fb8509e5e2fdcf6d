"""DB-GPT's evaluation page (``web/types/evaluate.ts``): its lists, datasets and runs in the
page's shapes, and the requests it sends."""

from __future__ import annotations

from typing import Any, Generic

from pydantic import BaseModel, Field

from ragmeter.wire.pages import T
from ragmeter.wire.runs import MetricInfo


class PageMetricInfo(MetricInfo):
    """A metric as DB-GPT's page lists it: ``describe`` is its label in the form."""

    describe: str


class DbgptPage(BaseModel, Generic[T]):
    """A page of a list as DB-GPT's page reads it (``items``, ``total_count``)."""

    items: list[T]
    total_count: int
    total_pages: int
    page: int
    page_size: int


class DbgptDataset(BaseModel):
    """A stored dataset in the page's shape; ``code`` is its name."""

    code: str
    name: str
    file_type: str
    storage_type: str
    storage_position: str = ""
    datasets_count: int
    have_answer: bool
    members: str | None = None  # not kept: null, so the page draws no empty tag
    user_name: str | None = None
    user_id: str | None = None
    sys_code: str | None = None
    gmt_create: str | None = None
    gmt_modified: str | None = None


class DbgptEvaluation(BaseModel):
    """A run in the page's shape: ``average_score`` is a JSON object text, one mean per metric."""

    evaluate_code: str
    scene_key: str
    scene_value: str | None
    datasets: str
    datasets_name: str
    evaluate_metrics: str
    context: dict[str, Any] = Field(default_factory=dict)
    user_name: str | None = None
    user_id: str | None = None
    sys_code: str | None = None
    parallel_num: str
    state: str
    result: str | None = None
    average_score: str | None = None
    log_info: str | None = None
    gmt_create: str | None = None
    gmt_modified: str | None = None


class DbgptStartRequest(BaseModel):
    """``POST /api/v1/evaluate/start`` as the page sends it: single strings where the API takes
    lists (``datasets`` is one dataset's code, ``evaluate_metrics`` one name or several
    comma-separated, ``parallel_num`` a number as text)."""

    evaluate_code: str | None = Field(None, max_length=64)
    scene_key: str | None = Field(None, max_length=32)
    scene_value: str | None = Field(None, max_length=200)
    datasets: str = Field(min_length=1, max_length=200)
    evaluate_metrics: str | list[str] | None = None
    context: dict[str, Any] | str | None = None
    parallel_num: int | str | None = None
    user_name: str | None = Field(None, max_length=200)
    user_id: str | None = Field(None, max_length=200)
    sys_code: str | None = Field(None, max_length=200)


class DbgptContentUpload(BaseModel):
    """``POST /api/v1/evaluate/dataset/upload/content``: rows typed into the page."""

    dataset_name: str = Field(min_length=1, max_length=200)
    members: str | None = Field(None, max_length=10_000)
    content: str = Field(min_length=1)


class DbgptMembersUpdate(BaseModel):
    code: str = Field(min_length=1, max_length=200)
    members: str | None = Field(None, max_length=10_000)
