"""The course's benchmark commands (``course bench NAME``), one module each."""
