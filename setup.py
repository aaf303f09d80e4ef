"""Package layout (everything else is in setup.cfg): the click commands live in
the repository's commands/ folder but install as `nlq.commands`, so nlq puts
no generic top-level module into site-packages."""

from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["nlq", "nlq.*"]) + ["nlq.commands"],
    package_dir={"nlq.commands": "commands"},
)
