"""Course code the lectures call beyond the engine: model builders, races, readings, sweeps, widgets and plots."""
