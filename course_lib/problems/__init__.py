"""Problems the course evolves solutions for, built on the engine's public names."""
