"""The program record (`jaxcredit.program`): the source fingerprint is the same for the same source
in a checkout's layout and in a wheel's, changes with any edit, and the Ray backend's check refuses
a worker whose program is not the driver's."""

import os
import shutil

import pytest

from jaxcredit.program import package_dirs, program_record, source_fingerprint
from jaxcredit.train.backends import check_program


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def test_fingerprint_is_layout_free_and_changes_with_the_source(tmp_path):
    # a checkout: subpackages beside the package (pyproject's package-dir); a wheel: inside it
    checkout, wheel = tmp_path / "checkout", tmp_path / "wheel"
    files = {"jaxcredit": {"__init__.py": "x = 1\n", "a.py": "y = 2\n"},
             "jaxcredit.train": {"__init__.py": "", "loop.py": "z = 3\n"}}
    for name, sources in files.items():
        for rel, text in sources.items():
            write(str(checkout / name.split(".")[-1] / rel), text)
            write(str(wheel / name.replace(".", os.sep) / rel), text)
        write(str(checkout / name.split(".")[-1] / "__pycache__" / "a.cpython-311.pyc.py"), "cache")
    in_checkout = {"jaxcredit": str(checkout / "jaxcredit"), "jaxcredit.train": str(checkout / "train")}
    in_wheel = {"jaxcredit": str(wheel / "jaxcredit"), "jaxcredit.train": str(wheel / "jaxcredit" / "train")}
    fingerprint = source_fingerprint(in_checkout)
    assert fingerprint == source_fingerprint(in_wheel) and len(fingerprint) == 12
    write(str(wheel / "jaxcredit" / "train" / "loop.py"), "z = 4\n")
    assert source_fingerprint(in_wheel) != fingerprint
    shutil.move(str(checkout / "train" / "loop.py"), str(checkout / "train" / "loop2.py"))  # a rename counts
    assert source_fingerprint(in_checkout) != fingerprint


def test_program_record_names_this_install():
    program_record.cache_clear()  # read now, as a fresh process would
    record = program_record()
    assert record["source"] == source_fingerprint(package_dirs())
    assert set(package_dirs()) >= {"jaxcredit", "jaxcredit.train", "jaxcredit.envs"}
    assert os.path.isdir(os.path.join(record["location"], "jaxcredit"))


def test_check_program_refuses_another_program():
    driver = {"version": "0.1.0", "source": "aaaaaaaaaaaa", "location": "/opt/a"}
    check_program(driver, dict(driver, location="/elsewhere"))  # the same source installed elsewhere
    with pytest.raises(RuntimeError, match=r"source bbbbbbbbbbbb\) from /work/b, the sweep's driver .*"
                                           r"source aaaaaaaaaaaa\) from /opt/a"):
        check_program(driver, {"version": "0.1.0", "source": "bbbbbbbbbbbb", "location": "/work/b"})
