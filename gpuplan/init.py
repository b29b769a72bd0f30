"""Old import path of `gpuplan init`, which lives in gpuplan.commands.init."""

from gpuplan.commands.init import FILES, INPUT_FOLDERS, init_repo, template_text
from gpuplan.installation import HOOK_REPO

__all__ = ["FILES", "HOOK_REPO", "INPUT_FOLDERS", "init_repo", "template_text"]
