"""Writing the output: canonical YAML (yamlout) and the safe, atomic writer (tree, safefs, staging)."""
