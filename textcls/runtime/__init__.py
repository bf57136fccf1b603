"""The machinery: paths, atomic files, devices, threads, memory, limits, sizing, distributed process groups."""
