"""A recorded run: its records, its scenario, canonical values, the readers and the judge bundle.

The first room of the pipeline (trajectory → scoring → aggregate → db → judges → agreement →
present/report → commands): everything that turns bytes on disk into a validated ``Trajectory``.
"""
