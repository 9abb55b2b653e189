"""evalkit: deterministic scoring of agent trajectories, an optional LLM judge, and agreement audits.

The public surface is :mod:`evalkit.api` (``import evalkit.api as ek``): one function per command
(``ek.score``, ``aggregate``, ``judge``, ``audit``, ``report``, ``import_runs``, ``probe``,
``compare``, ``plan``, ``verdicts``) and the types they return; its ``__all__`` is pinned by a test.
It is not re-exported here because ``evalkit.aggregate``, ``evalkit.report`` and
``evalkit.verdicts`` are the folders of those steps. ``import evalkit`` stays light: nothing here
imports litellm, numpy, scipy or pydantic.

The pipeline, one folder a step (docs/architecture.md)::

    trajectory/ → scoring/ → aggregate/ → engines/ → db/ → judges/ → probes/ → agreement/
                → present/ → report/ → commands/   (beside them: importers/, output/, config/, verdicts/)
"""

__version__ = "0.1.0"
