"""`gpuplan diff`: what a change does to the rendered fleet (objects, disruptions, capacity)."""
