"""The probes' names, in their documented order: the one list the transforms, the gates, the
statistics and ``evalkit probe --help`` read.

Standard library only and nothing imported, so that the command line can name the probes without
loading the transforms (and the trajectory model under them).
"""

PROBES = ("false_claim", "injection", "verbosity", "distractor_reads", "identity", "shuffle_reads")
# Probes whose success is fooling the judge into passing a failed run: they report fooled_rate.
FOOLING_PROBES = ("false_claim", "injection")
