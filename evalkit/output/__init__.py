"""Writing files: atomically (a temporary file beside the target and a rename) and as Parquet."""
