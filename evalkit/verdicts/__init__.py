"""Verdict files (classification results) scored for agreement, calibration and cost (``analysis``)."""
