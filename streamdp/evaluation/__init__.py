"""Evaluation helpers: agreement of detected events with reference events."""
