"""burstlake: HPC I/O trace lake, burstiness metrics and contention replay."""
