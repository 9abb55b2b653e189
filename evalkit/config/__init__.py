"""Configuration files (one TOML reader, one validation rule) and the bundled data directories."""
