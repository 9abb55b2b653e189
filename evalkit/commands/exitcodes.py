"""The exit codes of every `evalkit` command (README.md, "Exit codes")."""

EXIT_OK = 0  # done; every input was used
EXIT_BAD_INPUT = 1  # some input (file, database, config, provider reply) was bad; the rest was still done
EXIT_USAGE = 2  # bad flags, missing files, unknown names (click's own usage errors exit 2 too)
EXIT_WARNINGS = 2  # `evalkit check --strict`: warnings and no problem (CI fails as on a usage error)
# a quality gate (--fail-under, --min-pass-rate, --min-safe-pass-rate, --max-unsafe-rate,
# compare --fail-if-worse, probe --fail-if) failed
EXIT_GATE = 3
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT), finished work kept
EXIT_BROKEN_PIPE = (
    141  # stdout's reader went away (`| head`), quietly: 128 + SIGPIPE, as a shell reports a filter's end
)
