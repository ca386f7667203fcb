"""Build glue: the wheel ships the chapter notebooks as ``attncourse/notebooks/``, so that an
installed course starts without a clone, and the tested versions (``constraints.txt``) that
chapter 00's environment check compares with (all other settings are in pyproject.toml)."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPyWithNotebooks(build_py):
    def run(self):
        super().run()
        if self.editable_mode:  # an editable install reads the clone's notebooks/ in place
            return
        target = Path(self.build_lib) / "attncourse" / "notebooks"
        self.mkpath(str(target))
        for notebook in sorted(Path("notebooks").glob("[0-9][0-9]_*.ipynb")):
            self.copy_file(str(notebook), str(target / notebook.name))
        self.copy_file(
            "constraints.txt", str(Path(self.build_lib) / "attncourse" / "constraints.txt")
        )


setup(cmdclass={"build_py": BuildPyWithNotebooks})
