"""Agreement statistics and the judge audit (read-only over scores and annotations)."""
