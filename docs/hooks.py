"""MkDocs hook: add the reference pages, generated from the code at build time (never committed).

gpuplan.views.reference writes them: input fields from the models, diagnostic codes from the check
registry (with the golden cases of tests/cases/ as examples), commands from click, versions from
the component registry. A field, code, command or option without a description fails the build.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

from gpuplan.cli import cli
from gpuplan.views.reference import reference_pages


def on_files(files: Files, config: Any) -> Files:
    """Add reference/fields.md, codes.md, commands.md and versions.md to the site's files."""
    project = Path(config.config_file_path).parent
    for path, text in reference_pages(cli, project / "tests" / "cases").items():
        files.append(File.generated(config, path, content=text))
    return files
