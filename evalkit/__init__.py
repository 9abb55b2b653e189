"""evalkit: deterministic scoring of agent trajectories, an optional LLM judge, and agreement audits.

The public Python API lives in :mod:`evalkit.api`; the command line is a thin shell over it.
Nothing here imports litellm, numpy or scipy: `evalkit score` stays light.
"""
__version__ = "0.1.0"

from evalkit import _moved

_moved.install()
