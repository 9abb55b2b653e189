"""Engines that score many files: in this process, in a local process pool, or on a Ray cluster.

:func:`evalkit.engines.pipeline.score_files` is the one way in. Every engine scores batches of
files with the same function (:func:`evalkit.engines.job.score_batch`), so output is byte-identical
whatever the engine and worker count; ``ray`` is imported only by the ray engine.
"""
