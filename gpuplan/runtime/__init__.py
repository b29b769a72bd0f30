"""The process at the edge of the pipeline: start and exit, timings, a second core, the watch loop.

The stages never import this package: commands hand them what they need (a `both` to split work).
"""
