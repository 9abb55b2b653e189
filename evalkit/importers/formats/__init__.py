"""The formats ``evalkit import`` reads, one module each (the machinery that writes the runs, runs
the workers and builds the flags is the package above). A new format is one module here plus one
line in ``evalkit.importers.BUILTIN`` (or an entry point, for a plugin)."""
