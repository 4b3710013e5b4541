"""Command-line grids: ``--procs 2..4096`` and ``--sizes 1..4MiB`` as lists of points."""

from __future__ import annotations

from commcost.errors import InputError
from commcost.units import parse_nbytes


def parse_points(text: str, option: str, minimum: int, sizes: bool = False, maximum: int | None = None) -> list[int]:
    """``LO..HI`` (LO, then every power of two between, then HI) or a comma list; sizes take KiB/MiB.

    ``2..4096`` gives 2, 4, ..., 4096; ``3..100`` gives 3, 4, 8, ..., 64, 100;
    ``1,1KiB,1MiB`` gives those three. Points come back sorted, without repeats.
    """
    def number(item: str) -> int:
        item = item.strip()
        try:
            value = parse_nbytes(item) if sizes else int(item)
        except InputError as exc:  # the size's own message (an ambiguous 1KB gets its hint)
            raise InputError(exc.message, where=option) from None
        except ValueError:
            raise InputError(f"expected an integer, got {item!r}", where=option) from None
        if value < minimum:
            raise InputError(f"expected values >= {minimum}, got {value}", where=option)
        if maximum is not None and value > maximum:
            raise InputError(f"expected values <= {maximum:,}, got {value:,}", where=option)
        return value

    if ".." in text:
        lo_text, _, hi_text = text.partition("..")
        lo, hi = number(lo_text), number(hi_text)
        if hi < lo:
            raise InputError(f"expected LO..HI with LO <= HI, got {text!r}", where=option)
        points = {lo, hi}
        power = 1
        while power < hi:
            if power > lo:
                points.add(power)
            power *= 2
        return sorted(points)
    items = [t for t in text.split(",") if t.strip()]
    if not items:
        raise InputError(f"expected LO..HI or a comma list, got {text!r}", where=option)
    return sorted({number(t) for t in items})
