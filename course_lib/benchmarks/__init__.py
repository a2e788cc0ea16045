"""The `course bench` measurements, one module per command."""
