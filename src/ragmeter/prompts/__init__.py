"""Prompt templates: judge templates (AnswerRelevancyMetric) and app answer templates.

Names load on first use: rendering a template does not import the store (SQLAlchemy)."""
