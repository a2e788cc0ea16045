"""Helpers of the lectures: races, curves and plots built on the engine's public names."""
