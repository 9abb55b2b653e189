"""The inline SVG charts: well-formed, escaped, faithful to the data, deterministic."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from evalkit.present.svg import bar_chart, heat_map, reliability_diagram

NS = {"s": "http://www.w3.org/2000/svg"}


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)  # raises on malformed markup or unescaped text


def test_bar_chart_one_bar_per_item_with_proportional_width():
    svg = parse(bar_chart([("a", 1.0), ("b", 0.5), ("c", 0.0)], title="t"))
    widths = [float(g.find("s:rect", NS).get("width")) for g in svg.findall("s:g", NS)]
    assert len(widths) == 3
    assert widths[0] == 2 * widths[1] and widths[2] == 0


def test_bar_chart_missing_value_is_marked_not_drawn_as_zero():
    svg = bar_chart([("a", None)], title="t")
    rect = parse(svg).find("s:g/s:rect", NS)
    assert rect.get("fill") == "none" and rect.get("stroke-dasharray")
    assert ">n/a<" in svg


def test_bar_chart_counts_scale_to_the_largest():
    svg = parse(bar_chart([("x", 2), ("y", 4)], title="t", max_value=None, value_format="d"))
    widths = [float(g.find("s:rect", NS).get("width")) for g in svg.findall("s:g", NS)]
    assert widths[1] == 2 * widths[0]


def test_bar_chart_flags_small_n():
    svg = bar_chart([("a", 0.5), ("b", 0.5)], title="t", flagged=[True, False])
    fills = [g.find("s:rect", NS).get("fill") for g in parse(svg).findall("s:g", NS)]
    assert fills[0] != fills[1]
    assert svg.count("(n&lt;3)") == 1


def test_labels_and_titles_are_escaped():
    evil = '<script>alert(1)</script>"&'
    for svg in (
        bar_chart([(evil, 0.5)], title=evil, label_chars=200),
        heat_map([evil], [evil], [[1]], title=evil, row_axis=evil, col_axis=evil),
        reliability_diagram([{"lo": 0.5, "hi": 0.6, "n": 1, "confidence": 0.55, "accuracy": 1.0}], title=evil),
    ):
        root = parse(svg)
        assert root.find(".//s:script", NS) is None
        assert "<script>" not in svg
        assert root.find("s:title", NS).text == evil


def test_heat_map_has_a_cell_per_entry_with_its_count():
    matrix = [[3, 0, 1], [2, 5, 0], [0, 0, 7]]
    svg = parse(heat_map(["a", "b", "c"], ["a", "b", "c"], matrix, title="cm"))
    cells = svg.findall("s:g", NS)
    assert len(cells) == 9
    assert [c.find("s:text", NS).text for c in cells] == [str(v) for row in matrix for v in row]
    fills = {(c.get("data-row"), c.get("data-col")): c.find("s:rect", NS).get("fill") for c in cells}
    assert fills[("c", "c")] == "#3b6ea5"  # the largest cell gets the full colour
    assert fills[("a", "b")] == "#ffffff"  # an empty cell stays white


def test_heat_map_all_zero_does_not_divide_by_zero():
    svg = parse(heat_map(["x"], ["x"], [[0]], title="empty"))
    assert svg.find("s:g/s:rect", NS).get("fill") == "#ffffff"


def test_reliability_diagram_skips_empty_bands_and_keeps_diagonal():
    bands = [
        {"lo": 0.0, "hi": 0.5, "n": 0, "confidence": None, "accuracy": None},
        {"lo": 0.5, "hi": 0.75, "n": 4, "confidence": 0.6, "accuracy": 0.5},
        {"lo": 0.75, "hi": 1.0, "n": 12, "confidence": 0.9, "accuracy": 1.0},
    ]
    svg = parse(reliability_diagram(bands, title="r"))
    points = svg.findall("s:circle", NS)
    assert len(points) == 2
    assert float(points[1].get("r")) > float(points[0].get("r"))  # more runs, bigger point
    # y grows downward: accuracy 1.0 sits above accuracy 0.5
    assert float(points[1].get("cy")) < float(points[0].get("cy"))
    assert svg.find("s:line[@class='diagonal']", NS) is not None


def test_charts_are_deterministic():
    args = ([("a", 0.123456), ("b", 0.5)],)
    assert bar_chart(*args, title="t") == bar_chart(*args, title="t")
    assert "0.123456" not in bar_chart(*args, title="t")  # coordinates are rounded, labels formatted
