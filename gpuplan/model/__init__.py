"""Input models, one file per kind (cluster, tenant); quantities and names; `Manifest`.

Nothing is imported here: `gpuplan validate` reads names and quantities without pydantic.
"""
