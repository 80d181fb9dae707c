"""The two charts over iterations (sessions/plot.py) share their axes: `csro
export`'s line chart and `csro compare`'s bands chart of the same figures show
the same grid, tick labels, axes and axis labels."""

from xml.etree import ElementTree

from csro_tui.sessions.plot import bands_chart_svg, line_chart_svg


def axes_of(svg: str) -> list[tuple]:
    """Every grid line, axis and text of a chart but its data, legend and title."""
    root = ElementTree.fromstring(svg)
    found = []
    for element in root:
        tag = element.tag.split("}")[-1]
        if tag in ("line", "text") and element.get("font-size") != "14":
            found.append((tag, tuple(sorted(element.attrib.items())), element.text))
    return found


def test_a_line_chart_and_a_bands_chart_of_the_same_figures_have_the_same_axes():
    xs, ys = [1, 2, 3, 4, 5, 6, 7], [0.9, 0.62, 0.4, 0.41, 0.25, 0.18, 0.175]
    line = line_chart_svg("export", xs, ys, y_label="exploitability", x_label="iteration")
    bands = bands_chart_svg("compare", [("only", xs, ys, [None] * len(xs))], y_label="exploitability",
                            x_label="iteration")
    line_axes = axes_of(line)
    bands_axes = [entry for entry in axes_of(bands) if entry[2] != "only"]  # less the legend's label
    assert line_axes == bands_axes
    assert [text for _tag, _attributes, text in line_axes if text] == [
        "0.00", "0.20", "0.40", "0.60", "0.80", "1.00", "1", "2", "3", "4", "5", "6", "7", "iteration", "exploitability"
    ]
