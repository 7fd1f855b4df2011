#!/usr/bin/env python3
"""clang-tidy over a build's compile commands, each translation unit once, clean results cached.

Each compile command whose file matches --files is analysed once per distinct set of flags (the
object path does not count). A clean result is remembered under a key made of everything the
analysis reads: clang-tidy's version, the .clang-tidy file, the flags and the translation unit
preprocessed with its comments (so a NOLINT or any included header changing invalidates it). On a
warm machine an unchanged file is not analysed again; cold, everything runs. Findings are never
cached, so a file with findings is analysed on every run until it is clean.

  scripts/clang-tidy-cached.py -p BUILD_DIR [--files REGEX] [-j N] [--cache DIR]
                               [--clang-tidy clang-tidy-14] [--clang clang++-14]

Exit status 1 when any translation unit has a warning or error, 2 on bad usage.
"""
import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
import time

# GCC-only warning flags in the compile commands are not clang-tidy's business.
EXTRA_ARGS = ["-Wno-unknown-warning-option"]
FINDING = re.compile(r"(warning|error): ")


def default_cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.environ.get("TESSERA_TIDY_CACHE") or os.path.join(base, "tessera", "clang-tidy")


def compile_args(entry):
    """The compiler's arguments of one entry, without the compiler, -c, -o OUT and the file."""
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    out, skip = [], False
    for arg in args[1:]:
        if skip:
            skip = False
            continue
        if arg == "-o":
            skip = True
            continue
        if arg == "-c" or arg.startswith("-o") and len(arg) > 2:
            continue
        if arg == entry["file"] or os.path.join(entry["directory"], arg) == entry["file"]:
            continue
        out.append(arg)
    return out


def unique_units(database, pattern):
    """(file, directory, args) once per file and flag set, in the database's order."""
    seen, units = set(), []
    for entry in database:
        path = entry["file"]
        if not os.path.isabs(path):
            path = os.path.normpath(os.path.join(entry["directory"], path))
        if not pattern.search(path):
            continue
        args = compile_args(dict(entry, file=entry["file"]))
        key = (path, tuple(args))
        if key in seen:
            continue
        seen.add(key)
        units.append((path, entry["directory"], args))
    return units


def run(cmd, cwd):
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, errors="replace")


def cache_key(unit, tool_version, config_text, clang, root):
    """None when the unit cannot be preprocessed (then it is analysed and not cached).

    The checkout's own path is left out (CI clones into a new folder each time), as ccache's
    base directory does: the same sources in another clone give the same key."""
    path, directory, args = unit
    pre = run([clang, "-E", "-C", *args, *EXTRA_ARGS, path], directory)
    if pre.returncode != 0:
        return None
    digest = hashlib.sha256()
    for part in (tool_version, config_text, path, "\0".join(args), pre.stdout):
        digest.update(part.replace(root, "<root>").encode())
        digest.update(b"\0")
    return digest.hexdigest()


def analyse(unit, tidy, cache, tool_version, config_text, clang, root):
    """(path, 'cached'|'clean'|'findings', output)."""
    path, directory, args = unit
    key = cache_key(unit, tool_version, config_text, clang, root)
    marker = os.path.join(cache, key[:2], key) if key else None
    if marker and os.path.exists(marker):
        return path, "cached", ""
    result = run([tidy, "--quiet", path, "--", *args, *EXTRA_ARGS], directory)
    output = result.stdout + result.stderr
    if result.returncode != 0 or FINDING.search(output):
        return path, "findings", output
    if marker:
        os.makedirs(os.path.dirname(marker), exist_ok=True)
        with open(marker + ".tmp", "w", encoding="utf-8") as f:
            f.write(path + "\n")
        os.replace(marker + ".tmp", marker)
    return path, "clean", ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-p", dest="build", required=True, help="build dir with compile_commands.json")
    parser.add_argument("--files", default=".*", help="regex over absolute source paths")
    parser.add_argument("-j", dest="jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--cache", default=default_cache_dir())
    parser.add_argument("--clang-tidy", dest="tidy", default="clang-tidy-14")
    parser.add_argument("--clang", default="clang++-14", help="preprocessor for the cache key")
    parser.add_argument("--config", default=".clang-tidy", help="the checks file (part of the key)")
    parser.add_argument("--root", default=os.getcwd(),
                        help="the checkout, whose path the cache key leaves out")
    opts = parser.parse_args()

    try:
        with open(os.path.join(opts.build, "compile_commands.json"), encoding="utf-8") as f:
            database = json.load(f)
        with open(opts.config, encoding="utf-8") as f:
            config_text = f.read()
    except (OSError, json.JSONDecodeError) as err:
        print(f"clang-tidy-cached: {err}", file=sys.stderr)
        return 2
    version = run([opts.tidy, "--version"], None)
    if version.returncode != 0:
        print(f"clang-tidy-cached: {opts.tidy} --version failed: {version.stderr}", file=sys.stderr)
        return 2

    units = unique_units(database, re.compile(opts.files))
    if not units:
        print(f"clang-tidy-cached: no compile command matches {opts.files!r}", file=sys.stderr)
        return 2
    start = time.monotonic()
    counts = {"cached": 0, "clean": 0, "findings": 0}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, opts.jobs)) as pool:
        root = os.path.realpath(opts.root).rstrip("/") + "/"
        futures = [pool.submit(analyse, u, opts.tidy, opts.cache, version.stdout, config_text,
                               opts.clang, root) for u in units]
        for future in concurrent.futures.as_completed(futures):
            path, outcome, output = future.result()
            counts[outcome] += 1
            if outcome == "findings":
                print(f"--- {path}\n{output}", flush=True)
    print(f"clang-tidy-cached: {len(units)} translation units: {counts['clean']} analysed clean, "
          f"{counts['cached']} unchanged since a clean analysis, {counts['findings']} with findings "
          f"({time.monotonic() - start:.0f} s)")
    return 1 if counts["findings"] else 0


if __name__ == "__main__":
    sys.exit(main())
