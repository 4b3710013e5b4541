"""Every reader and predict's options, fuzzed (issue 16 item 1): a result, or one line naming the file or option.

Property-based (hypothesis): each case starts from a valid file of the
format and breaks it the way files break in practice (a line deleted or
repeated, the file cut short, a number replaced by NaN, inf, -1, 0, 1e400,
a word or nothing, lines swapped, binary or non-UTF-8 bytes, an empty file,
a directory in its place). Allowed outcomes: the reader returns, or raises
:class:`InputError` whose message names the file; anything else (a
traceback of another type) fails, and so does a case that runs past
``CASE_LIMIT_S`` (no reader may hang). A file read is compared with the
valid one's reading: the same (the edit touched a comment or blank
space), changed by a valid edit (a row deleted, another valid number), or
*malformed and read without a word*, which fails: the generator says which
of its edits no format takes (:func:`broken`), so "silently accepted" is
counted, per reader, and must be 0 (issue 38). The case count is printed by
``-s``. Without ``FUZZ_EXAMPLES`` the cases are the same every run
(hypothesis derandomized), so CI is reproducible; ``FUZZ_EXAMPLES=N``
(environment) hunts with N fresh random cases per test.

``predict --collective`` is fuzzed the same way over its options (P,
sizes, root, ppn, mapping, parameters, including 0, -1, 10^7, ``1.5KiB``,
``1e400``), and so are every other command's: select, partition, import
osu, calibrate and tune (their dry runs), evaluate-selection, fit, arrange,
map, export-goal, params repair, rules show and diff, and measure-kernel
and measure-pattern (run up to their launch, with ``/bin/false`` as the
mpirun): exit 0 with finite, non-negative times (every ``*_s`` of the
JSON), or exit 2 with one line on standard error and no traceback, within
the case limit.

Found and fixed by it: non-UTF-8 bytes crashing six readers; a segmented
pipeline of millions of segments filling the memory (now refused before its
arrays are built); han pipelines of thousands of segments running for
minutes (now at most 1,024 segments, stated); an infinite or NaN
``--budget``; tune's dry run printing no JSON; a job script without ranks
per node reported as missing; map's negative ``--seed`` (a numpy traceback)
and infinite ``--time-limit`` (a search without end); a NaN ``--timeout``
(a traceback from the selector); options of another kind of fit silently
ignored; an infinite ``--reduce-time-per-byte``; rules diff's ``--ppn 0``;
measure-kernel's ``--procs 10000000`` (728 TiB asked of numpy) and its
partitions checked only between MPI runs; measure-pattern's ``--value-bytes
0`` launched (all pinned in ``FOUND``); a Matrix Market file with a binary
byte or a last line of too many fields that made scipy's compiled reader
end the process with a segmentation fault (now checked before scipy reads
it), and its integers past 64 bits (an OverflowError); the same
OverflowError from a partition file's coordinate and a measurements cell;
a coltune job script with ``ppr:0:node`` (a division by zero); calibrate
``--procs 10000000`` planning a Ring_tau point per tau (24 GB, killed).
Since it counts what is read without a word: NUL bytes read into names
(a partition's host, a measurements row's collective) and rows of NUL or
non-UTF-8 bytes skipped in OSU and IMB outputs; a table row whose size
became ``inf`` or a word skipped as launcher noise; a speeds key no
process looks up; an MCA switch of ``nan`` taken for off; a Matrix Market
entry of NaN; a measurements timestamp that is no date; a misplaced key
in a JSON rules file dropped.
"""

from __future__ import annotations

import os
import signal
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from commcost.errors import InputError

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "examples"
DATA = ROOT / "tests" / "data"
FUZZ = DATA / "fuzz"  # small valid files of the formats commcost writes (rules, schedules, measurements)
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "100"))
# CI runs the same cases every time (a red CI must mean a change broke something, not a lucky draw); a hunt with
# FUZZ_EXAMPLES set draws fresh random cases, and what it finds is fixed and pinned below
HUNT = "FUZZ_EXAMPLES" in os.environ
CASE_LIMIT_S = 10

BAD_NUMBERS = ["nan", "NaN", "inf", "-inf", "-1", "0", "1e400", "1e30", "-0", "abc", "", "1.5", "99999999999999999999",
               '"x"', "[]", "{}"]
OMPI_CLASSIC = "1\n7\n1\n4\n2\n0 1 0 0\n8192 6 0 0\n"  # bcast (id 7), P = 4: linear below 8 KiB, binomial above


def _platform():
    from commcost.io.platform_file import load_platform
    return load_platform(EX / "paper000" / "platform.toml")[0]


def _osu(path):
    from commcost.io.osu_import import read_osu
    return read_osu(path)


def _osu_collective(path):
    from commcost.io.osu_import import RunContext, read_osu
    return read_osu(path, RunContext(nprocs=4))


def _mapping(path):
    from commcost.io.mapping_file import load_mapping_file
    return load_mapping_file(path, _platform())


def _gamma(path):
    from commcost.io.gamma_table import read_gamma_table
    return read_gamma_table(path, "SUM_I", strict=False)


def _taulop(path):
    from commcost.io.taulop_table import read_taulop_table
    return read_taulop_table(path, strict=False, warnings=[])


def _params(path):
    from commcost.io.params_file import load_params
    params = load_params(path)
    for name in params.sections:  # what a command does next: build each model from its section
        if name in ("hockney", "loggp", "taulop", "hloggp", "loggph", "maxrate"):
            params.for_model(name)
    return params


def _measurements(path):
    from commcost.io.measurements import fit_times, measurement_columns, read_some_measurements
    return fit_times(measurement_columns(read_some_measurements(path)))  # as fit, tune and evaluate go on


def _scotch(path):
    from commcost.io.scotch_files import read_mapping
    from commcost.io.text_lines import text_of
    return read_mapping(text_of(path, "Scotch mapping"), 6, source=str(path))


def _coltune(path):
    """The file as one output (or the job script) of an ompi-collectives-tuning folder, read as a folder."""
    import shutil

    from commcost.io.coltune_import import read_coltune
    if path.parent.name != "bcast":  # a missing file or a directory given as the folder
        return read_coltune(path)
    other = "bcast_coltune.sh" if path.suffix == ".out" else "6_8ranks_run0.out"
    if not (path.parent / other).exists():
        shutil.copy(DATA / "peak-coltune" / "output" / "bcast" / other, path.parent / other)
    return read_coltune(path.parents[2], host="fuzz")


def _reader(module: str, name: str):
    def read(path):
        import importlib
        return getattr(importlib.import_module(module), name)(path)
    return read


# name -> (reader, valid file, suffix the copy keeps, or "/" and the path it takes inside a folder)
READERS = {
    "platform": (_reader("commcost.io.platform_file", "load_platform"), EX / "cluster" / "platform.toml", ".toml"),
    "platform-paper000": (_reader("commcost.io.platform_file", "load_platform"), EX / "paper000" / "platform.toml",
                          ".toml"),
    "params": (_params, EX / "params" / "illustrative.toml", ".toml"),
    "schedule-json": (_reader("commcost.io.schedule_file", "load_schedule"), EX / "paper000" / "summa_k80.json",
                      ".json"),
    "schedule-binomial": (_reader("commcost.io.schedule_file", "load_schedule"), EX / "paper000" / "binomial16.json",
                          ".json"),
    "taulop-table": (_taulop, EX / "params" / "metropolis" / "SHM.txt", ".txt"),
    "gamma-table": (_gamma, EX / "params" / "metropolis" / "gamma.txt", ".txt"),
    "osu": (_osu, DATA / "osu" / "osu_latency_shm.out", ".out"),
    "osu-collective": (_osu_collective, DATA / "osu" / "osu_allreduce.out", ".out"),
    "imb": (_reader("commcost.io.imb_import", "read_imb"), DATA / "imb" / "IMB-MPI1_np4.out", ".out"),
    "speeds": (_reader("commcost.io.speeds_file", "read_speeds"), EX / "paper000" / "fig8_speeds.txt", ".txt"),
    "fermi-speeds": (_reader("commcost.io.speeds_file", "read_speeds"), EX / "fermi" / "speeds.txt", ".txt"),
    "process-layout": (_reader("commcost.io.process_layout_file", "read_process_layout"),
                       EX / "paper000" / "fig8_layout.txt", ".txt"),
    "layout-table": (_reader("commcost.io.layout_file", "read_layout_table"), EX / "fermi" / "table1.txt", ".txt"),
    "partition": (_reader("commcost.io.partition_file", "read_partition"), EX / "paper000" / "fig8_partition.txt",
                  ".txt"),
    "mapping": (_mapping, EX / "paper000" / "wave2d_ranks.txt", ".txt"),
    "bandwidths": (_reader("commcost.io.bandwidths_file", "load_bandwidths"), EX / "grid5000" / "bandwidths.toml",
                   ".toml"),
    "ompi-rules": (_reader("commcost.io.ompi_rules_read", "read_ompi_rules"), OMPI_CLASSIC, ".conf"),
    "ompi-rules-json": (_reader("commcost.io.ompi_rules_read", "read_ompi_rules"), FUZZ / "ompi-rules.json",
                        ".json"),
    "schedule-toml": (_reader("commcost.io.schedule_file", "load_schedule"), FUZZ / "binomial16.toml", ".toml"),
    "measurements": (_measurements, FUZZ / "measurements.csv", ".csv"),
    "han-rules": (_reader("commcost.io.han_rules_read", "read_han_rules"), FUZZ / "han-rules.conf", ".conf"),
    "mca-params": (_reader("commcost.io.han_rules", "read_mca_params"), FUZZ / "mca-params.conf", ".conf"),
    "mpich-json": (_reader("commcost.io.mpich_json", "read_mpich_json"), FUZZ / "mpich.json", ".json"),
    "scotch-mapping": (_scotch, FUZZ / "scotch.map", ".map"),
    "goal": (_reader("commcost.io.goal_file", "read_goal"), FUZZ / "binomial8.goal", ".goal"),
    "matrix-market": (_reader("commcost.kernels.sparse", "read_matrix"), FUZZ / "poisson2d_4.mtx", ".mtx"),
    "coltune-output": (_coltune, DATA / "peak-coltune" / "output" / "bcast" / "6_8ranks_run0.out",
                       "/output/bcast/6_8ranks_run0.out"),
    "coltune-script": (_coltune, DATA / "peak-coltune" / "output" / "bcast" / "bcast_coltune.sh",
                       "/output/bcast/bcast_coltune.sh"),
}


@contextmanager
def time_limit(seconds: int):
    """Fail a case that runs longer than ``seconds`` (a hang) instead of waiting for it."""
    def stop(signum, frame):
        raise TimeoutError(f"no answer in {seconds} s")
    old = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


NOT_NUMBERS = {"nan", "NaN", "inf", "-inf", "abc", "1e400", '"x"', "[]", "{}"}  # never a number's value
OUTPUTS = {"osu", "osu-collective", "imb", "coltune-output"}  # benchmark outputs: text around the tables is noise
EMPTY_OK = {"mca-params", "params"}  # an empty file is one of these (no settings; no model, refused when used)
JSON = {"schedule-json", "schedule-binomial", "ompi-rules-json", "mpich-json"}  # a '}' line may close what another
# edit opened: the document is then valid, not malformed
CUT_SHORT = {"measurements"}  # a last line without its newline is a write cut short, ignored by design


@st.composite
def broken(draw, text: str, output: bool = False, empty_ok: bool = False, json: bool = False,
           cut_short: bool = False) -> tuple[bytes, list[str]]:
    """``text`` broken one to three times the way files break, and what of it is malformed whatever the format
    (the oracle a file read without a word is held to): bytes that are not text, an empty file where one is
    not valid, a junk line (not in a benchmark's output, whose text around its tables is skipped), a number
    become NaN, inf, 1e400 or a word where it stood alone (not in a quoted string or comment; in a benchmark
    output, only in a table row still shaped as one, and while no swap moved rows out of their table). An
    edit that a later one undid (a line deleted, the file cut) is not counted, nor one on a last line left
    without its newline where the format ignores that line (``cut_short``)."""
    lines = text.splitlines(keepends=True) or [""]
    how = draw(st.sampled_from(["empty", "binary", "edits"]), label="how")
    if how == "empty":
        return draw(st.sampled_from([b"", b"\n", b"   \n\n"])), [] if empty_ok else ["an empty file"]
    if how == "binary":
        cut = draw(st.integers(0, len(text)))
        return text[:cut].encode() + draw(st.sampled_from([b"\xff\xfe\x00\x01", b"\x00" * 8, b"\xc3\x28",
                                                            bytes(range(256))])) + text[cut:].encode(), ["binary bytes"]
    bad: list[tuple[str, str, str]] = []  # (kind, the line it made, what it was)
    done: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, max(len(lines) - 1, 0)))
        edit = draw(st.sampled_from(["delete", "repeat", "truncate", "number", "swap", "junk"]))
        done.append(edit)
        if edit == "delete" and len(lines) > 1:
            del lines[i]
        elif edit == "repeat":
            lines.insert(i, lines[i])
        elif edit == "truncate":
            whole = "".join(lines)
            lines = whole[:draw(st.integers(0, len(whole)))].splitlines(keepends=True) or [""]
        elif edit == "number":
            import re
            numbers = list(re.finditer(r"-?\d+(\.\d+)?([eE][-+]?\d+)?", lines[i]))
            if numbers:
                m = draw(st.sampled_from(numbers))
                line, new = lines[i], draw(st.sampled_from(BAD_NUMBERS))
                lines[i] = line[:m.start()] + new + line[m.end():]
                before = line[m.start() - 1] if m.start() else " "
                after = line[m.end()] if m.end() < len(line) else " "
                alone = not (before.isalnum() or before in "_.-") and not (after.isalnum() or after in "_.")
                quoted = line[:m.start()].count('"') % 2 == 1 or "#" in line[:m.start()]
                if new in NOT_NUMBERS and alone and not quoted and not (output and not _row_shaped(line, lines[i])):
                    bad.append(("line", lines[i], f"{m.group()} became {new} in {line.strip()[:50]!r}"))
        elif edit == "swap" and len(lines) > 1:
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif edit == "junk":
            junk = draw(st.sampled_from(["garbage here\n", "= = =\n", "[[[\n", "}\n", ",,,\n", "\t\n"]))
            lines.insert(i, junk)
            if junk.strip() and not output and not (json and junk == "}\n"):
                bad.append(("junk", junk, f"a line {junk.strip()!r}"))
    final = "".join(lines)

    def whole_lines(junk: str, of: str) -> int:  # a junk line stuck to a line cut short is part of that line
        return ("\n" + of).count("\n" + junk)

    swapped = output and "swap" in done
    kept = [said for kind, made, said in bad
            if (kind == "line" and made in lines and not swapped and not (cut_short and made is lines[-1]
                                                                          and not made.endswith("\n")))
            or (kind == "junk" and whole_lines(made, final) > whole_lines(made, text))]
    return final.encode(), kept


def _row_shaped(line: str, made: str) -> bool:
    """A benchmark output's table row (it starts with a digit) still shaped as one after the edit: it still
    starts with a digit, or every field after its first is a number (NaN and infinity included). A line with
    a word after its first field is launcher noise to any reader (``srun: Job 12 step creation ...``)."""
    from commcost.io.text_lines import reads_as_number
    fields = made.split()
    return line.strip()[:1].isdigit() and len(fields) >= 2 and (
        made.strip()[:1].isdigit() or all(reads_as_number(t) for t in fields[1:]))


def canon(value, depth: int = 0):
    """What a reader returned, as nested tuples that compare equal where the values do (arrays by dtype, shape
    and bytes): to tell a file read the same from one read differently."""
    import dataclasses

    import numpy as np
    if depth > 12:
        return "..."
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, np.generic):
        return ("scalar", repr(value.item()))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__name__,
                tuple((f.name, canon(getattr(value, f.name), depth + 1)) for f in dataclasses.fields(value)))
    if isinstance(value, dict):
        return ("dict", tuple((canon(k, depth + 1), canon(v, depth + 1)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return ("list", tuple(canon(v, depth + 1) for v in value))
    if isinstance(value, float):
        return ("float", repr(value))
    if isinstance(value, (int, str, bytes, bool, type(None))):
        return value
    if hasattr(value, "__dict__"):
        return (type(value).__name__, canon(vars(value), depth + 1))
    return repr(value)


def check(read, path: Path) -> tuple[str, object]:
    """Read ``path``: ('ok', what the reader returned), or ('refused', None) for an InputError that names the
    file; anything else fails."""
    try:
        with time_limit(CASE_LIMIT_S):
            value = read(path)
    except InputError as exc:
        assert str(path) in str(exc) or path.name in str(exc), f"the message does not name the file: {exc}"
        assert "\n" not in str(exc).strip(), f"not one line: {exc!r}"
        return "refused", None
    return "ok", value


SEEN: dict[str, dict[str, int]] = {}


@pytest.mark.parametrize("name", sorted(READERS))
def test_a_broken_file_is_read_or_refused_naming_the_file(name, tmp_path_factory):
    read, valid, suffix = READERS[name]
    text = valid if isinstance(valid, str) else valid.read_text()
    folder = tmp_path_factory.mktemp(name)
    if name == "params":  # the tables its sections name, beside it
        import shutil
        shutil.copytree(valid.parent, folder, dirs_exist_ok=True)
    path = folder / (suffix[1:] if suffix.startswith("/") else f"input{suffix}")  # "/a/b": that path in a folder
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    outcome, value = check(read, path)
    assert outcome == "ok", "the valid file must load"
    valid_read = canon(value)
    counts = SEEN.setdefault(name, {"same": 0, "changed": 0, "refused": 0, "accepted": 0})
    accepted: list[str] = []

    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=not HUNT,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(case=broken(text, output=name in OUTPUTS, empty_ok=name in EMPTY_OK, json=name in JSON,
                       cut_short=name in CUT_SHORT))
    def case(case: tuple[bytes, list[str]]) -> None:
        data, malformed = case
        path.write_bytes(data)
        outcome, value = check(read, path)
        if outcome == "refused":
            counts["refused"] += 1
        elif canon(value) == valid_read:
            counts["same"] += 1  # the edit touched nothing the reader keeps (a comment, blank space)
        elif malformed:
            counts["accepted"] += 1  # read without a word, and differently
            valid = text.encode()
            at = next((k for k in range(min(len(data), len(valid))) if data[k] != valid[k]), min(len(data), len(valid)))
            accepted.append(f"{'; '.join(malformed)}: ...{data[max(at - 80, 0):at + 80]!r}...")
        else:
            counts["changed"] += 1  # a valid edit (a row deleted or repeated, another valid number)

    case()
    print(f"{name}: {counts['same']} read unchanged, {counts['changed']} read changed by a valid edit, "
          f"{counts['refused']} refused, {counts['accepted']} malformed read without a word")
    assert not accepted, "malformed and read without a word:\n" + "\n".join(accepted[:5])


@pytest.mark.parametrize("name", sorted(READERS))
def test_a_missing_file_or_a_directory_is_refused_naming_it(name, tmp_path):
    read = READERS[name][0]
    assert check(read, tmp_path / "missing.txt") == ("refused", None)
    assert check(read, tmp_path) == ("refused", None)


def run_cli(argv: list[str], capsys) -> tuple[int, str]:
    """Run ``commcost ARGV`` within the case limit: exit 0 (returns its standard output) or exit 2 with one
    line on standard error and no traceback; anything else fails."""
    from commcost.cli.main import main

    capsys.readouterr()
    try:
        with time_limit(CASE_LIMIT_S):
            code = main(argv)
    except SystemExit as exc:  # argparse: a value of the wrong type
        code = exc.code
    out, err = capsys.readouterr()
    assert code in (0, 2), (argv, err)
    assert "Traceback" not in err, (argv, err)
    if code == 2:
        assert len(err.strip().splitlines()) == 1 and err.startswith("commcost"), (argv, err)
    return code, out


BAD_OPTION_VALUES = ["0", "1", "-1", "2", "3", "7", "64", "10000000", "1.5", "1e400", "nan", "inf", "", "abc",
                     "1KiB", "1.5KiB", "1K", "1KB", "4M", "2..8", "8..2", "1:4K", "1,2,3", ",", "..", "-1..4"]
OPTION_NAMES = ["--procs", "--nbytes", "--root", "--ppn", "--param", "--mapping"]
MAPPINGS = ["sequential:4", "sequential:0", "round-robin", "round-robin:0", "random:4:seed=1", "file:/nonexistent",
            "layout:x:y", "nonsense", "sequential:-1"]


@settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=not HUNT,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(algorithm=st.sampled_from(["binomial", "6", "knomial", "chain", "scatter_allgather_ring", "mpich.binomial",
                                  "ompi.han", "all"]),
       changes=st.dictionaries(st.sampled_from(OPTION_NAMES), st.sampled_from(BAD_OPTION_VALUES), max_size=3),
       mapping=st.none() | st.sampled_from(MAPPINGS), collective=st.sampled_from(["bcast", "allreduce", "gather"]),
       fmt=st.sampled_from(["table", "json", "csv"]))
def test_predict_options_give_a_sane_result_or_one_line(capsys, algorithm, changes, mapping, collective, fmt):
    import json
    import math

    options = {"--procs": "4", "--nbytes": "1KiB", **changes}
    if "--param" in options:
        options["--param"] = f"segsize={options['--param']}"
    if mapping is not None:
        options["--mapping"] = mapping
    argv = ["predict", "--collective", collective, "--platform", str(EX / "cluster" / "platform.toml"),
            "--params", str(EX / "params" / "illustrative.toml"), "--model", "taulop", "--format", fmt,
            *(["--all-algorithms"] if algorithm == "all" else ["--algorithm", algorithm])]
    for flag, value in options.items():
        argv += [flag, value]
    code, out = run_cli(argv, capsys)
    if code == 2:
        return
    if fmt == "json":
        doc = json.loads(out)
        times = [doc["time_s"]] if "time_s" in doc else [r["time_s"] for r in doc.get("results", [])]
        times += [t for p in doc.get("points", []) for t in p["times_s"].values() if t is not None]
        assert all(math.isfinite(t) and t >= 0 for t in times), (argv, times)


# --- the other commands' options -----------------------------------------------------------------------------

PEAK_CSV = FUZZ / "sweeps.csv"  # Peak bcast sweeps at P = 8 and 32, up to 64 bytes
SIZES = ["1", "0", "-1", "1KiB", "1.5KiB", "1e400", "1KB", "1..4KiB", "4KiB..1", "1:4K", "8,1K", "", "abc", "1..1PiB",
         "1..2PiB"]
PROCS = ["2", "1", "0", "-1", "2..16", "16..2", "2..10000000", "3,5,7", "10000000", "1e3", "", "x"]
COMMANDS = {  # name -> (argv before the fuzzed options, {option: values to try}, examples)
    "select": (["select", "bcast", "--params", str(EX / "params" / "illustrative.toml"), "--platform",
                str(EX / "cluster" / "platform.toml"), "--model", "hockney", "--procs", "2..8", "--sizes", "1..1KiB",
                "--format", "json"],
               {"--procs": PROCS, "--sizes": SIZES, "--ppn": ["0", "-1", "1", "32", "x"],
                "--root": ["0", "-1", "7", "100000", "x"], "--segsizes": SIZES, "--fanouts": ["0", "-1", "2,4", "x"],
                "--radixes": ["0", "1", "2,3", "-4"], "--algorithms": ["binomial", "nonesuch", ",", ""],
                "--mapping": MAPPINGS, "--library": ["ompi", "mpich", "x"], "--model": ["taulop", "hockney", "x"]},
               30),
    "partition": (["partition", "--layout", str(EX / "paper000" / "fig8_layout.txt"), "--speeds",
                   str(EX / "paper000" / "fig8_speeds.txt"), "--n", "40", "--format", "json"],
                  {"--n": ["0", "-1", "1", "2", "5", "100000", "x"], "--kb": ["0", "-1", "1", "x"],
                   "--columns": ["0", "-1", "1", "6", "7", "100", "x"], "--row": ["M10", "x"]}, 60),
    "import-osu": (["import", "osu", str(DATA / "osu" / "osu_latency_shm.out"), "--format", "json"],
                   {"--nprocs": ["0", "-1", "1", "2", "4", "x"], "--ppn": ["0", "-1", "1", "2", "x"],
                    "--nnodes": ["0", "-1", "1", "3", "x"], "--channel": ["shm", "", "x y"],
                    "--collective": ["bcast", "x", ""], "--algorithm": ["7", "-1", "x", ""],
                    "--run": ["0", "-1", "x"], "--name-pattern": ["{nprocs}", "{x}", "*", "{nprocs}{nprocs}"],
                    "--datatype": ["MPI_INT", "x"]}, 60),
    "calibrate": (["calibrate", "--dry-run", "--format", "json"],
                  {"--procs": PROCS, "--budget": ["0", "-1", "1", "1e400", "nan", "x"], "--sizes": SIZES,
                   "--benchmarks": ["pingpong", "x", "", "pingpong,bcast", ","],
                   "--channel-launcher": ["shm=mpirun -np 2", "x", "=", "tcp=", "nonesuch=mpirun"],
                   "--rounds": ["0", "-1", "1", "3", "x"]}, 60),
    "tune": (["tune", "--dry-run", "--format", "json", "--no-verify"],
             {"--procs": PROCS, "--budget": ["0", "-1", "60", "1e400", "nan", "x"], "--select-procs": PROCS,
              "--sizes": SIZES, "--ppn": ["0", "-1", "1", "x"], "--segsizes": SIZES, "--han-segsizes": SIZES,
              "--han-modules": ["all", "adapt", "default", "x", ""], "--min-gain": ["0", "-1", "10%", "1e400", "x", "nan"], "--collectives": ["bcast", "x", "", ","],
              "--nodes": ["0", "-1", "2", "x"], "--calibration-rounds": ["0", "-1", "2", "x"]}, 60),
    "evaluate-selection": (["evaluate-selection", "--train", str(PEAK_CSV), "--from-collectives", "--test",
                            str(PEAK_CSV), "--platform", str(EX / "peak" / "platform.toml"), "--ppn", "42",
                            "--format", "json"],
                           {"--ppn": ["0", "-1", "1", "x"], "--train-max-procs": ["0", "-1", "2", "x"],
                            "--test-min-procs": ["0", "-1", "100000", "x"], "--collective": ["bcast", "x", "gather"],
                            "--model": ["hockney", "taulop", "x"], "--root": ["-1", "5", "x"]}, 20),
    "fit": (["fit", str(FUZZ / "pingpong.csv"), "--model", "hockney", "-o", "{tmp}/fit.toml", "--format", "json"],
            {"--model": ["hockney", "loggp", "taulop", "loggph", "maxrate", "ompi_bcast_model", "x"],
             "--transfers": ["shm=2", "shm=0", "shm=-1", "tcp=1", "shm=x", "=", "shm", "shm=1e400"],
             "--benchmark": ["osu_latency", "osu_bw", "x", ""], "--statistic": ["median", "mean", "x"],
             "--from-collectives": [None], "--platform": [str(EX / "cluster" / "platform.toml"), "/nonexistent"],
             "--collectives": ["bcast", "x", "", ","], "--max-procs": ["0", "-1", "2", "x"],
             "--shm-channel": ["shm", "", "x"], "--network-channel": ["tcp", "shm", ""]}, 40),
    "arrange": (["arrange", "mpdata", "--platform", str(EX / "grid5000" / "platform.toml"), "--bandwidths",
                 str(EX / "grid5000" / "bandwidths.toml"), "--format", "json"],
                {"--ppn": ["0", "-1", "1", "2", "100000", "x"],
                 "--domain": ["512x512x64", "0x1x1", "-1x2x2", "1e400x2x2", "8x8", "x", "3x3x3", "100000x100000x100000"],
                 "--halo": ["1x1", "0x0", "-1x1", "100x100", "x"], "--value-bytes": ["0", "-1", "8", "1e400", "x"],
                 "--initial": ["sequential", "round-robin", "random:3", "random:x", "x"],
                 "--initial-shape": ["3x4", "1x12", "0x12", "5x5", "x"], "--level": ["node", "cluster", "x"],
                 "--exhaustive": [None], "--params": [str(EX / "grid5000" / "params.toml"), "/nonexistent"],
                 "--model": ["hockney", "x"],
                 "--bandwidths-from": ["hockney", "x"]}, 40),
    "map": (["map", "--collective", "bcast", "--algorithm", "binomial", "--procs", "8", "--nbytes", "1KiB",
             "--platform", str(EX / "cluster" / "platform.toml"), "--params", str(EX / "params" / "illustrative.toml"),
             "--model", "hockney", "--time-limit", "0.05", "--format", "json"],
            {"--procs": ["0", "1", "-1", "2", "16", "10000000", "x"], "--nbytes": SIZES,
             "--ppn": ["0", "-1", "1", "4", "100000", "x"], "--nodes": ["0", "-1", "1", "2", "100000", "x"],
             "--start": ["sequential", "round-robin", "random:1", "random:x", "graph", "file:/nonexistent",
                         "heuristic", "x"],
             "--time-limit": ["0", "-1", "0.01", "nan", "inf", "1e400", "x"], "--seed": ["0", "-1", "x"],
             "--algorithm": ["binomial", "6", "knomial", "mpich.binomial", "99", "x"],
             "--root": ["0", "-1", "7", "8", "x"], "--param": ["segsize=1KiB", "segsize=-1", "x", "fanout=0"],
             "--model": ["taulop", "hockney", "x"]}, 40),
    "export-goal": (["export-goal", "--collective", "bcast", "--algorithm", "binomial", "--procs", "16",
                     "--nbytes", "1KiB", "--format", "json"],
                    {"--procs": PROCS, "--nbytes": SIZES, "--root": ["0", "-1", "15", "16", "x"],
                     "--algorithm": ["binomial", "6", "chain", "mpich.binomial", "99", "x", ""],
                     "--param": ["segsize=1KiB", "segsize=1", "segsize=-1", "fanout=0", "x=1", "x"],
                     "--reduce-time-per-byte": ["0", "-1", "1e-9", "nan", "inf", "x"],
                     "-o": ["{tmp}/out.goal", "{tmp}", "/nonexistent/x.goal"]}, 40),
    "params-repair": (["params", "repair", str(EX / "params" / "shm.tsv"), "-o", "{tmp}/repaired.tsv",
                       "--format", "json"],
                      {"-o": ["{tmp}/r.toml", "{tmp}", "/nonexistent/x.tsv", ""],
                       "--format": ["table", "json", "x"]}, 10),
    "rules-show": (["rules", "show", str(FUZZ / "ompi-rules.json"), "--format", "json"],
                   {"--kind": ["ompi", "han", "mpich", "x"], "--format": ["table", "json", "x"]}, 10),
    "rules-diff": (["rules", "diff", str(FUZZ / "ompi-rules.json"), str(FUZZ / "ompi-rules.json"), "--format", "json"],
                   {"--collective": ["bcast", "allreduce", "x", ""],
                    "--params": [str(EX / "params" / "illustrative.toml"), "/nonexistent"],
                    "--platform": [str(EX / "cluster" / "platform.toml"), "/nonexistent"],
                    "--model": ["hockney", "taulop", "x"], "--ppn": ["0", "-1", "1", "x"], "--strict": [None]}, 20),
    # the measuring commands run to their launch and stop there: /bin/false is the mpirun, so every option
    # that passes validation ends in one line saying the MPI run failed (bounded, no ranks started)
    "measure-kernel": (["measure-kernel", "summa", "--procs", "2", "--params", str(EX / "params" / "illustrative.toml"),
                        "--mpirun", "/bin/false", "--out", "{tmp}/mk", "--format", "json"],
                       {"--procs": PROCS, "--n": ["0", "-1", "1", "2", "32", "100000", "x"],
                        "--kb": ["0", "-1", "1", "1e400", "x"], "--steps": ["0", "-1", "1", "x"],
                        "--model": ["hockney", "x", ""], "--network": ["shm", "tcp", "x"],
                        "--timeout": ["0", "-1", "nan", "1", "x"],
                        "--partition": [str(EX / "paper000" / "fig8_partition.txt"), "/nonexistent"]}, 30),
    "measure-pattern": (["measure-pattern", "--pattern", "spmv", "--matrix", str(EX / "sparse" / "poisson3d_16.mtx"),
                         "--procs", "2", "--params", str(EX / "params" / "illustrative.toml"), "--mpirun",
                         "/bin/false", "--out", "{tmp}/mp", "--format", "json"],
                        {"--procs": ["0", "1", "-1", "2", "4", "100000", "x"],
                         "--partition": ["contiguous", "metis", "x"], "--value-bytes": ["0", "-1", "8", "1e400", "x"],
                         "--order": ["in-order", "reversed", "x"], "--repeat": ["0", "-1", "1", "x"],
                         "--model": ["hockney", "x"], "--network": ["shm", "tcp", "x"],
                         "--platform": [str(EX / "cluster" / "platform.toml"), "/nonexistent"],
                         "--ppn": ["0", "-1", "1", "x"], "--amg-levels": [None],
                         "--matrix": [str(FUZZ / "pingpong.csv"), "/nonexistent"]}, 30),
}


def _times(doc) -> list[float]:
    """Every number under a key naming seconds (``*_s``) in a JSON document."""
    out = []
    if isinstance(doc, dict):
        for key, value in doc.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and str(key).endswith("_s"):
                out.append(float(value))
            else:
                out += _times(value)
    elif isinstance(doc, list):
        for value in doc:
            out += _times(value)
    return out


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_commands_options_give_a_sane_result_or_one_line(name, tmp_path, capsys):
    import json
    import math

    base, choices, examples = COMMANDS[name]
    counts = {0: 0, 2: 0}

    @settings(max_examples=EXAMPLES if HUNT else min(EXAMPLES, examples),
              deadline=None, database=None, derandomize=not HUNT,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(changes=st.dictionaries(st.sampled_from(sorted(choices)), st.data(), max_size=3))
    def case(changes) -> None:
        argv = list(base)
        for flag, data in changes.items():
            value = data.draw(st.sampled_from(choices[flag]), label=flag)
            argv += [flag] if value is None else [flag, value]
        argv = [arg.replace("{tmp}", str(tmp_path)) for arg in argv]
        if name in ("partition", "import-osu"):
            argv += ["-o", str(tmp_path / ("out.txt" if name == "partition" else "out.csv"))]
        if name in ("calibrate", "tune"):
            argv += ["--out", str(tmp_path / "run")]
        code, out = run_cli(argv, capsys)
        counts[code] += 1
        formats = [argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg == "--format"]
        if code == 2 or formats[-1:] != ["json"]:
            return
        times = _times(json.loads(out))
        assert all(math.isfinite(t) and t >= 0 for t in times), (argv, times)

    case()
    print(f"{name}: {counts[0]} ran, {counts[2]} refused")


FOUND = [  # what the fuzz suite found in the commands' options, pinned: (argv, the option the line must name)
    (["map", "--collective", "bcast", "--algorithm", "binomial", "--procs", "8", "--nbytes", "1KiB", "--platform",
      str(EX / "cluster" / "platform.toml"), "--params", str(EX / "params" / "illustrative.toml"), "--model",
      "hockney", "--seed", "-1"], "--seed"),  # numpy's ValueError escaped
    (["map", "--collective", "bcast", "--algorithm", "binomial", "--procs", "8", "--nbytes", "1KiB", "--platform",
      str(EX / "cluster" / "platform.toml"), "--params", str(EX / "params" / "illustrative.toml"), "--model",
      "hockney", "--time-limit", "inf"], "--time-limit"),  # searched forever
    (["measure-kernel", "summa", "--procs", "2", "--params", str(EX / "params" / "illustrative.toml"),
      "--timeout", "nan"], "--timeout"),  # the selector's ValueError escaped
    (["rules", "diff", str(FUZZ / "ompi-rules.json"), str(FUZZ / "ompi-rules.json"), "--ppn", "0"], "--ppn"),
    (["fit", str(FUZZ / "pingpong.csv"), "--model", "hockney", "-o", "x.toml", "--max-procs", "-1"], "--max-procs"),
    (["fit", str(FUZZ / "pingpong.csv"), "--model", "hockney", "-o", "x.toml", "--platform", "/nonexistent"],
     "--platform"),  # silently ignored
    (["export-goal", "--collective", "reduce", "--algorithm", "binomial", "--procs", "4", "--nbytes", "1KiB",
      "--reduce-time-per-byte", "inf"], "--reduce-time-per-byte"),  # wrote 'calc inf'
    (["measure-kernel", "summa", "--procs", "10000000", "--params", str(EX / "params" / "illustrative.toml")],
     "--procs"),  # numpy asked for 728 TiB
    (["measure-kernel", "summa", "--procs", "2..2000", "--n", "8", "--params", str(EX / "params" / "illustrative.toml")],
     "--procs"),  # ran MPI for every P before finding that N was too small for the last
    (["measure-pattern", "--pattern", "spmv", "--matrix", str(EX / "sparse" / "poisson3d_16.mtx"), "--procs", "2",
      "--params", str(EX / "params" / "illustrative.toml"), "--value-bytes", "0"], "--value-bytes"),  # ran MPI
    (["calibrate", "--dry-run", "--procs", "10000000", "--out", "run"], "--procs"),  # 10^7 Ring_tau points (OOM)
    (["arrange", "mpdata", "--platform", str(EX / "grid5000" / "platform.toml"), "--bandwidths",
      str(EX / "grid5000" / "bandwidths.toml"), "--model", "x"], "--model"),  # silently ignored
]


@pytest.mark.parametrize("argv,option", FOUND, ids=[f"{a[0]}{o}" for a, o in FOUND])
def test_what_the_fuzz_found_is_refused_in_one_line(argv, option, capsys):
    from commcost.cli.main import main

    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and option in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err


def test_a_layout_past_the_process_limit_is_refused_at_its_line(tmp_path):
    from commcost.io.process_layout_file import read_process_layout

    path = tmp_path / "layout.txt"
    path.write_text("node0 cpu:1 3\nnode1 cpu:1 99999999999999999999\n")  # was an OverflowError from list.extend
    with pytest.raises(InputError, match=r"layout.txt:line 2.*at most 10,000,000 processes"):
        read_process_layout(path)


@pytest.mark.parametrize("body", [b"1 1 1\n2 2 1 2 2 ", b"1 1 1\n2 2 -1\xff\xfe\x00\x01\n"],
                         ids=["extra-fields-no-newline", "binary-bytes"])
def test_matrix_market_files_that_crash_scipys_reader_are_refused_first(body, tmp_path):
    """scipy 1.17's compiled mmread ends the process (SIGSEGV) on these; read_matrix refuses them before it.
    Run in a child so a regression fails this test instead of killing the suite."""
    import subprocess
    import sys

    path = tmp_path / "bad.mtx"
    path.write_bytes(b"%%MatrixMarket matrix coordinate real general\n2 2 2\n" + body)
    code = ("from commcost.errors import InputError\nfrom commcost.kernels.sparse import read_matrix\n"
            f"try:\n    read_matrix({str(path)!r})\nexcept InputError as exc:\n    print(exc)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"the reader crashed (exit {done.returncode}): {done.stderr[-300:]}"
    assert "bad.mtx:line 4" in done.stdout, done.stdout


def test_a_partition_coordinate_past_64_bits_is_refused_at_its_line(tmp_path):
    from commcost.io.partition_file import read_partition

    text = (EX / "paper000" / "fig8_partition.txt").read_text().splitlines()
    row = next(i for i, line in enumerate(text) if line.strip() and not line.startswith("#"))
    fields = text[row].split()
    fields[4] = "99999999999999999999"  # x: was an OverflowError from numpy
    text[row] = " ".join(fields)
    path = tmp_path / "partition.txt"
    path.write_text("\n".join(text) + "\n")
    with pytest.raises(InputError, match=rf"partition.txt:line {row + 1}: field 'x'"):
        read_partition(path)


def test_a_measurements_cell_past_its_bound_is_refused_naming_the_column(tmp_path):
    lines = (FUZZ / "pingpong.csv").read_text().splitlines()
    cells = lines[1].split(",")
    cells[7] = "99999999999999999999"  # nbytes: was an OverflowError building the int64 column
    path = tmp_path / "m.csv"
    path.write_text("\n".join([lines[0], ",".join(cells), *lines[2:]]) + "\n")
    with pytest.raises(InputError, match=r"m.csv:line 2.*nbytes.*at most 1,125,899,906,842,624"):
        _measurements(path)


def test_a_coltune_script_placing_no_rank_per_node_is_refused_naming_it(tmp_path):
    import shutil

    from commcost.io.coltune_import import read_coltune

    folder = tmp_path / "output" / "bcast"
    folder.mkdir(parents=True)
    shutil.copy(DATA / "peak-coltune" / "output" / "bcast" / "6_8ranks_run0.out", folder)
    (folder / "bcast_coltune.sh").write_text("mpirun --np 2 --map-by ppr:0:node ./osu_bcast\n")  # was 1/0
    with pytest.raises(InputError, match=r"bcast_coltune.sh: an mpirun line places 0 ranks per node"):
        read_coltune(tmp_path)
