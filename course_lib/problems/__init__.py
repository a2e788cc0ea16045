"""Optimisation problems for the course, defined with the engine's public API."""
