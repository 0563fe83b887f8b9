"""Offline work on recorded sessions: replay through the private pipeline, and evaluation."""
