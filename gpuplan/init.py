"""Old import path of `gpuplan init`, which lives in gpuplan.commands.init."""

from gpuplan.commands.init import FILES, HOOK_REPO, INPUT_FOLDERS, init_repo, template_text

__all__ = ["FILES", "HOOK_REPO", "INPUT_FOLDERS", "init_repo", "template_text"]
