"""The render cache: what the last successful render of a repository produced, to skip work.

A render records, per repository and output folder, the identity of everything it read (input
files, gpuplan's own code and version, the CRD folder) and, per written file, the key of the
object in it, its content hash and its stat signature. With that record:

- `render --check` on unchanged inputs compares the output on disk with the recorded hashes and
  answers without loading anything (gpuplan.cache.output);
- a render after a change skips validating and serializing every object whose key is unchanged
  and whose file on disk is still the recorded one, and carries those files over instead of
  writing them (gpuplan.cache.record).

The cache lives in $GPUPLAN_CACHE_DIR/render (default ~/.cache/gpuplan/; "off" or
`render --no-cache` disables it), never in the repository or the output folder. Deleting it is
always safe: the next render is a cold one. A
record that is unreadable, truncated, of another format or from another gpuplan is ignored, and
cache files are never opened through a symbolic link (gpuplan.cache.store).
"""
