"""Sum a `JAXCREDIT_TEST_CPU_LOG` file per test file: `python tests/cpu_report.py FILE [--tests N]
[--write-costs]`.

Prints the files by CPU seconds (this process plus waited-for subprocesses), with wall seconds and
the in-process XLA compile seconds beside them, and the N costliest single tests. `--write-costs`
also writes each logged file's wall seconds into `tests/file_costs.json` (files the log lacks keep
their entries), the table `conftest.py` orders the files by. Not a test module (pytest collects `test_*.py` only).
"""

import argparse
import collections
import json
import os

COSTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "file_costs.json")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log")
    parser.add_argument("--tests", type=int, default=25, help="how many single tests to list")
    parser.add_argument("--write-costs", action="store_true", help=f"update {os.path.basename(COSTS)}")
    args = parser.parse_args()
    files = collections.defaultdict(lambda: [0.0, 0.0, 0.0])  # CPU, wall and compile seconds
    tests = collections.defaultdict(lambda: [0.0, 0.0, 0.0])
    with open(args.log) as f:
        for line in f:
            row = json.loads(line)
            cpu = row["cpu"] + row["children_cpu"]
            for table, key in ((files, row["test"].split("::")[0]), (tests, row["test"])):
                table[key][0] += cpu
                table[key][1] += row["wall"]
                table[key][2] += row.get("compile", 0.0)  # logs written before the compile column: 0
    total, compiled = sum(v[0] for v in files.values()), sum(v[2] for v in files.values())
    head = f"{'cpu s':>8} {'wall s':>8} {'compile':>8}"
    print(f"{head}  file (total {total:.0f} CPU s, {compiled:.0f} of them in-process compiles, {len(files)} files)")
    for name, (cpu, wall, compile_s) in sorted(files.items(), key=lambda kv: -kv[1][0]):
        print(f"{cpu:8.1f} {wall:8.1f} {compile_s:8.1f}  {name}")
    print(f"\n{head}  the {args.tests} costliest tests (setup + call + teardown)")
    for name, (cpu, wall, compile_s) in sorted(tests.items(), key=lambda kv: -kv[1][0])[:args.tests]:
        print(f"{cpu:8.1f} {wall:8.1f} {compile_s:8.1f}  {name}")
    if args.write_costs:
        costs = json.load(open(COSTS)) if os.path.exists(COSTS) else {}
        costs.update({os.path.basename(name): round(wall, 1) for name, (_, wall, _) in files.items()})
        with open(COSTS, "w") as f:
            json.dump(dict(sorted(costs.items())), f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
