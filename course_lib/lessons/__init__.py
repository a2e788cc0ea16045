"""Helpers of the lectures, one module per lecture topic."""
