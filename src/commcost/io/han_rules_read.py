"""Reading Open MPI 5's coll/han dynamic rules back: what a han rules file decides, per level.

The format is the one :mod:`commcost.io.han_rules` writes and
``coll_han_dynamic_file.c`` (v5.0.x) reads: whitespace-separated tokens,
``#`` comments to the end of the line, counts followed by their entries::

    NB_COLLECTIVES
      COLLECTIVE NB_LEVELS
        LEVEL NB_CONFIGS
          COMM_SIZE NB_RULES
            MSG_SIZE COMPONENT [@ALGORITHM]

Lookups are lower bounds, as han's selector does them: the last
configuration whose COMM_SIZE is <= the level's communicator size, then its
last rule whose MSG_SIZE is <= the call's bytes. Collectives, levels and
components are read by name. Where Open MPI would drop the whole file (and
run han's MCA defaults) this reader raises :class:`~commcost.errors.InputError`
naming the file, line and field: a count that is not a number, a first
configuration not for size 1, a first rule not for 0 bytes, sizes out of
ascending order, an ``@algorithm`` after a component other than han.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from commcost.collectives.ompi_han import HAN_ALGORITHMS
from commcost.errors import InputError
from commcost.io.text_lines import data_lines
from commcost.units import too_long_for_int

LEVELS = ("intra_node", "inter_node", "global_communicator")
COMPONENTS = ("self", "basic", "libnbc", "tuned", "sm", "adapt", "han", "xhc", "acoll", "smdirect")
HAN_ALGORITHM_NAMES = tuple(HAN_ALGORITHMS.values())  # han's @names


@dataclass(frozen=True)
class HanRule:
    """Calls of at least ``msg_lo`` bytes run ``component`` (with ``algorithm``, han's ``@name``, or "")."""

    msg_lo: int
    component: str
    algorithm: str = ""
    line: int = 0


@dataclass(frozen=True)
class HanConfig:
    """The rules of communicators of at least ``comm_lo`` ranks at one level."""

    comm_lo: int
    rules: tuple[HanRule, ...]


@dataclass(frozen=True)
class HanRules:
    """A han rules file: ``{collective: {level: configurations}}`` in file order."""

    collectives: dict[str, dict[str, tuple[HanConfig, ...]]]

    def config_at(self, collective: str, nprocs: int, level: str = "global_communicator") -> HanConfig | None:
        """The configuration a communicator of ``nprocs`` ranks takes its rules from at ``level``."""
        config = None
        for candidate in self.collectives.get(collective, {}).get(level, ()):
            if candidate.comm_lo > nprocs:
                break
            config = candidate
        return config

    def decide(self, collective: str, nprocs: int, nbytes: int, level: str = "global_communicator") -> HanRule | None:
        """The rule han's selector applies to a call of ``nbytes`` on ``nprocs`` ranks at ``level``; None
        where the file has none (han then takes its MCA default component)."""
        config = self.config_at(collective, nprocs, level)
        if config is None:
            return None
        rule = None
        for candidate in config.rules:
            if candidate.msg_lo > nbytes:
                break
            rule = candidate
        return rule


class _Words:
    """The words of a han rules file with their line numbers."""

    def __init__(self, path: str | Path) -> None:
        self.source = str(path)
        self.items = [(number, word) for number, fields in data_lines(path, "han rules file") for word in fields]
        self.position = 0

    def peek(self) -> str | None:
        return self.items[self.position][1] if self.position < len(self.items) else None

    def word(self, what: str) -> tuple[int, str]:
        if self.position >= len(self.items):
            last = self.items[-1][0] if self.items else 1
            raise InputError(f"the file ends where {what} was expected", source=self.source, where=f"line {last}")
        item = self.items[self.position]
        self.position += 1
        return item

    def number(self, what: str) -> tuple[int, int]:
        line, word = self.word(what)
        if not word.isdigit() or too_long_for_int(word):
            raise InputError(f"expected {what} (a non-negative integer), got {word!r}", source=self.source,
                             where=f"line {line}")
        return line, int(word)

    def name(self, what: str, allowed: tuple[str, ...]) -> tuple[int, str]:
        line, word = self.word(what)
        if word not in allowed:
            raise InputError(f"expected {what} among {', '.join(allowed)}, got {word!r}", source=self.source,
                             where=f"line {line}")
        return line, word


def _rules(words: _Words, where: str) -> tuple[HanRule, ...]:
    _, count = words.number(f"the number of rules of {where}")
    rules: list[HanRule] = []
    for index in range(count):
        line, msg = words.number(f"the message size of {where} rule {index + 1}")
        if index == 0 and msg != 0:
            raise InputError(f"the first rule of {where} must be for 0 bytes, got {msg}", source=words.source,
                             where=f"line {line}")
        if rules and msg <= rules[-1].msg_lo:
            raise InputError(f"message size {msg} is not above the previous {rules[-1].msg_lo}", source=words.source,
                             where=f"line {line}")
        _, component = words.name(f"the component of {where} rule {index + 1}", COMPONENTS)
        algorithm = ""
        following = words.peek()
        if following is not None and following.startswith("@"):
            at_line, token = words.word("an algorithm")
            if component != "han" or token[1:] not in HAN_ALGORITHM_NAMES:
                raise InputError(f"expected @{' or @'.join(HAN_ALGORITHM_NAMES)} after han, got {component} {token}",
                                 source=words.source, where=f"line {at_line}")
            algorithm = token[1:]
        rules.append(HanRule(msg, component, algorithm, line))
    return tuple(rules)


def read_han_rules(path: str | Path) -> HanRules:
    """The rules of a coll/han dynamic rules file (``coll_han_dynamic_rules_filename``)."""
    from commcost.io.han_rules import HAN_COLLECTIVES

    words = _Words(path)
    source = words.source
    _, ncollectives = words.number("the number of collectives")
    collectives: dict[str, dict[str, tuple[HanConfig, ...]]] = {}
    for _ in range(ncollectives):
        line, name = words.name("a collective", HAN_COLLECTIVES)
        if name in collectives:
            raise InputError(f"collective {name} appears twice", source=source, where=f"line {line}")
        levels: dict[str, tuple[HanConfig, ...]] = {}
        _, nlevels = words.number(f"the number of levels of {name}")
        for _ in range(nlevels):
            _, level = words.name(f"a level of {name}", LEVELS)
            _, nconfigs = words.number(f"the number of communicator sizes of {name} {level}")
            configs: list[HanConfig] = []
            for index in range(nconfigs):
                size_line, comm = words.number(f"a communicator size of {name} {level}")
                if index == 0 and comm != 1:
                    raise InputError(f"the first communicator size of {name} {level} must be 1, got {comm}",
                                     source=source, where=f"line {size_line}")
                if configs and comm <= configs[-1].comm_lo:
                    raise InputError(f"communicator size {comm} is not above the previous {configs[-1].comm_lo}",
                                     source=source, where=f"line {size_line}")
                configs.append(HanConfig(comm, _rules(words, f"{name} {level} communicator size {comm}")))
            levels[level] = tuple(configs)
        collectives[name] = levels
    if words.peek() is not None:
        line = words.items[words.position][0]
        raise InputError("words after the last rule (do the counts match?)", source=source, where=f"line {line}")
    return HanRules(collectives)
