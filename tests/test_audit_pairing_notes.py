"""The notes under the audit's pairings table: how many resamples left a kappa undefined is said of
a kappa the table shows, not of one already undefined (whose own note says why)."""

from __future__ import annotations

from evalkit.agreement.view import _pairing_notes

BOOT = {"n_resamples": 1000, "seed": 0, "ci": 0.95}


def _entry(name: str, value, n_undefined: int) -> dict:
    return {
        "pairing": name,
        "cohen_kappa": {"value": value, "bootstrap": {"n_undefined": n_undefined, "n_resamples": 1000}},
    }


def test_undefined_resamples_are_said_of_a_defined_kappa_only():
    entries = [_entry("outcome", 0.4, 12), _entry("safety", None, 1000), _entry("procedure", 0.9, 0)]
    notes = _pairing_notes({"bootstrap": BOOT}, entries)
    assert "outcome kappa undefined in 12 of 1000 resamples" in notes
    assert not any(n.startswith(("safety kappa", "procedure kappa")) for n in notes), notes
