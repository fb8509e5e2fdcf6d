"""What judging cost: requests, tokens and latency, per call, per row and per run."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

__all__ = ["Usage"]


@dataclass(slots=True)
class Usage:
    """Counters of judge work. ``requests`` includes retries and re-asks; ``cached`` counts
    replies served from the cache (no request sent)."""

    requests: float = 0
    cached: float = 0
    prompt_tokens: float = 0
    completion_tokens: float = 0
    latency_s: float = 0.0
    retries: float = 0
    reasks: float = 0
    embedding_requests: float = 0
    #: replies (sent or cached) of ragmeter's scripted judge: scores no model gave
    scripted: float = 0

    def add(self, other: Usage, share: float = 1.0) -> None:
        """Add ``other`` (or the ``share`` of it one consumer is charged) to these counters."""
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name) * share)

    @property
    def tokens(self) -> int:
        return round(self.prompt_tokens + self.completion_tokens)

    def to_dict(self) -> dict[str, float]:
        """Rounded for reports: counts to 3 decimals (shared work splits), latency in ms."""
        raw = asdict(self)
        latency = raw.pop("latency_s")
        out = {k: round(v, 3) for k, v in raw.items()}
        out["latency_ms"] = round(latency * 1000, 1)
        return out
