"""Colours and markers every picture shares: colour-blind safe, and never two labels drawn alike.

The colours are Okabe and Ito's eight ("Color Universal Design", 2008),
chosen to stay apart for the three kinds of colour blindness. A picture
with more labels than colours (13 broadcast algorithms, say) tells them
apart by marker as well: label i gets colour ``i mod 8`` and marker
``i mod len(MARKERS)``, so no two of the first 56 labels share both.

:func:`min_distance` is the check: the smallest CIE76 difference (Delta E
in CIELAB) between two colours of a palette, as seen with normal vision or
simulated protanopia, deuteranopia or tritanopia (Machado, Oliveira and
Fernandes 2009, severity 1, applied in linear sRGB). A Delta E near 2 is
the smallest difference people notice; Okabe-Ito keeps every pair above
25 for normal vision and above 15 under each simulation.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Sequence

import numpy as np

OKABE_ITO = ("#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7", "#000000")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "h", "<", ">", "p", "d", "8")
EXTRAPOLATED_HATCH = "///"  # drawn over the points the calibration did not reach

# Machado et al. 2009, Table 1 at severity 1.0: linear-RGB matrices that simulate each deficiency
VISION = {
    "normal": np.eye(3),
    "protanopia": np.array([[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
                            [-0.003882, -0.048116, 1.051998]]),
    "deuteranopia": np.array([[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
                              [-0.011820, 0.042940, 0.968881]]),
    "tritanopia": np.array([[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602],
                            [0.004733, 0.691367, 0.303900]]),
}
_SRGB_TO_XYZ = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
_WHITE_D65 = np.array([0.95047, 1.0, 1.08883])


@dataclass(frozen=True)
class Style:
    """How one label is drawn: a fill colour and a marker (matplotlib codes)."""

    colour: str
    marker: str

    @property
    def ink(self) -> str:
        """Black or white, whichever reads on ``colour`` (for a marker or text drawn on a filled cell)."""
        return "black" if _luminance(self.colour) > 0.25 else "white"


def style(index: int) -> Style:
    """The style of the ``index``-th label of a picture."""
    return Style(OKABE_ITO[index % len(OKABE_ITO)], MARKERS[index % len(MARKERS)])


def styles(labels: Sequence[str]) -> dict[str, Style]:
    """A style per label, in the order given (keep the order stable across a report's pictures)."""
    return {label: style(i) for i, label in enumerate(labels)}


def _rgb(colour: str) -> np.ndarray:
    text = colour.lstrip("#")
    return np.array([int(text[i:i + 2], 16) / 255.0 for i in (0, 2, 4)])


def _linear(rgb: np.ndarray) -> np.ndarray:
    return np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)


def _luminance(colour: str) -> float:
    return float(_SRGB_TO_XYZ[1] @ _linear(_rgb(colour)))


def lab(colour: str, vision: str = "normal") -> np.ndarray:
    """CIELAB (D65) of an ``#rrggbb`` colour as a person with ``vision`` (a key of :data:`VISION`) sees it."""
    linear = np.clip(VISION[vision] @ _linear(_rgb(colour)), 0.0, 1.0)
    t = (_SRGB_TO_XYZ @ linear) / _WHITE_D65
    f = np.where(t > (6 / 29) ** 3, np.cbrt(t), t / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def min_distance(colours: Sequence[str], vision: str = "normal") -> tuple[float, str, str]:
    """The closest pair of ``colours`` under ``vision``: (Delta E 1976, first, second)."""
    seen = [(c, lab(c, vision)) for c in colours]
    return min(((float(np.linalg.norm(a - b)), x, y) for (x, a), (y, b) in combinations(seen, 2)),
               default=(float("inf"), "", ""))
