// placeholder: filled in by the profiler work (issue 3)
